# The stack on a Kubernetes cluster (ENGINE=k8s, testbed/runtime/k8s/, docs/kubernetes.md).
# `make render ENGINE=k8s PROFILE=...` writes the objects and starts nothing; `make doctor
# ENGINE=k8s` checks the cluster. Variables: PROFILE, PLANE, PLACEMENT ("upf:edge gnb:ran" or a
# YAML file), MULTUS (1, 0, auto), K8S_CNI (bridge, macvlan, or per network: "bridge n3:macvlan"),
# K8S_MASTER, K8S_NAMESPACE (g5tb), REGISTRY, IMPORT_HOSTS, STACK_UP_TIMEOUT, KUBECTL.
.PHONY: k8s-up k8s-down k8s-images

K8S_SH = bash testbed/runtime/k8s/k8s.sh
K8S_RENDER = $(PYTHON) -m testbed render $(STACK_ARGS) --engine k8s --state "$(STATE)" --quiet $(if $(filter 1 yes true,$(SCP)),--scp,)

k8s-up: ## ENGINE=k8s: render PROFILE for the cluster and start it pod by pod in Compose's order (PLACEMENT=NF:NODE ...)
	dir="$$($(K8S_RENDER))" && $(K8S_SH) up "$$dir"

k8s-down: ## ENGINE=k8s: delete the stack's namespace (K8S_NAMESPACE, default g5tb) and everything in it
	$(K8S_SH) down "$(or $(K8S_NAMESPACE),g5tb)"

k8s-images: ## ENGINE=k8s: the render's images to REGISTRY=, or into containerd here and on IMPORT_HOSTS
	dir="$$($(K8S_RENDER))" && $(K8S_SH) images "$$dir"
