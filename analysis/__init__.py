"""Analysis of testbed results: parse (raw file -> tidy DataFrame), stats, figures, report.

Stages, each in its own module:

- ``analysis.parse``: pure functions from one raw file (ping output, iperf3 JSON, CPU
  accounting CSV, RWTH result text, packet capture via ``tshark -T fields``) to a tidy frame;
- ``analysis.results``: manifest-driven discovery of run directories;
- ``analysis.datasets``: tidy frames over all usable runs of a results tree;
- ``analysis.stats``: mean, sd, t-based confidence intervals, Welch CI of differences;
- ``analysis.figures``: one function per figure, looked up by name;
- ``analysis.report``: Markdown report with tables and the papers' values beside ours.

CLI: ``python -m analysis --help``; documentation: ``docs/analysis.md``.
"""
