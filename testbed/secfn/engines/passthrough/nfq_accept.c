/* nfq-accept: an NFQUEUE verdict program that accepts every packet (docs/secfn.md).
 * It isolates the cost of the queue itself (kernel -> userspace -> verdict) from the cost of
 * inspection. Usage: nfq-accept QUEUE_NUM [QUEUE_MAXLEN [FAIL_OPEN]]; prints its counters on
 * SIGTERM/SIGINT as one line "nfq-accept: packets=N" and exits 0. */
#include <arpa/inet.h>
#include <errno.h>
#include <linux/netfilter.h>
#include <libnetfilter_queue/libnetfilter_queue.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/socket.h>
#include <unistd.h>

static volatile sig_atomic_t stop;
static unsigned long long packets;

static void on_signal(int sig) { (void)sig; stop = 1; }

static int verdict(struct nfq_q_handle *qh, struct nfgenmsg *msg, struct nfq_data *nfa, void *data) {
  (void)msg; (void)data;
  struct nfqnl_msg_packet_hdr *ph = nfq_get_msg_packet_hdr(nfa);
  uint32_t id = ph ? ntohl(ph->packet_id) : 0;
  packets++;
  return nfq_set_verdict(qh, id, NF_ACCEPT, 0, NULL);
}

int main(int argc, char **argv) {
  if (argc < 2) { fprintf(stderr, "usage: nfq-accept QUEUE_NUM [QUEUE_MAXLEN [FAIL_OPEN]]\n"); return 2; }
  int num = atoi(argv[1]);
  unsigned maxlen = argc > 2 ? (unsigned)atoi(argv[2]) : 1024;
  int fail_open = argc > 3 ? atoi(argv[3]) : 0;
  struct sigaction sa = {0};
  sa.sa_handler = on_signal;           /* no SA_RESTART: recv() returns EINTR */
  sigaction(SIGTERM, &sa, NULL);
  sigaction(SIGINT, &sa, NULL);
  struct nfq_handle *h = nfq_open();
  if (!h) { perror("nfq-accept: nfq_open"); return 1; }
  struct nfq_q_handle *qh = nfq_create_queue(h, (uint16_t)num, &verdict, NULL);
  if (!qh) { perror("nfq-accept: nfq_create_queue (is another program serving the queue?)"); return 1; }
  if (nfq_set_mode(qh, NFQNL_COPY_PACKET, 0xffff) < 0) { perror("nfq-accept: nfq_set_mode"); return 1; }
  nfq_set_queue_maxlen(qh, maxlen);
  if (fail_open) nfq_set_queue_flags(qh, NFQA_CFG_F_FAIL_OPEN, NFQA_CFG_F_FAIL_OPEN);
  fprintf(stderr, "nfq-accept: serving queue %d (maxlen %u, fail-open %d)\n", num, maxlen, fail_open);
  int fd = nfq_fd(h);
  char buf[65536 + 4096] __attribute__((aligned));
  while (!stop) {
    ssize_t n = recv(fd, buf, sizeof buf, 0);
    if (n < 0) {
      if (errno == EINTR) continue;
      if (errno == ENOBUFS) continue;  /* the kernel dropped messages: counted by the queue's stats */
      perror("nfq-accept: recv");
      break;
    }
    nfq_handle_packet(h, buf, (int)n);
  }
  nfq_destroy_queue(qh);
  nfq_close(h);
  printf("nfq-accept: packets=%llu\n", packets);
  fflush(stdout);
  return 0;
}
