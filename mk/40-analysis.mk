# Analysis: figures, report and the speed benchmark (docs/analysis.md).
# OUT defaults to build/analysis/<name of RESULTS>; raw results are never written to.
ANALYSIS_OUT ?= build/analysis/$(notdir $(abspath $(RESULTS)))
ANALYSIS_PERMUTATIONS ?= 0
BENCH_COPIES ?= 4
BENCH_PING_LINES ?= 1000000

.PHONY: figures report bench-analysis

figures: ## draw every figure (PNG + PDF) from a results tree: make figures [RESULTS=dir] [ANALYSIS_OUT=dir]
	$(PYTHON) -m analysis figures "$(RESULTS)" --out "$(ANALYSIS_OUT)"

report: ## write the Markdown report (figures, tables, papers' values, provenance): make report [RESULTS=dir] [ANALYSIS_PERMUTATIONS=N]
	$(PYTHON) -m analysis report "$(RESULTS)" --out "$(ANALYSIS_OUT)" --permutations "$(ANALYSIS_PERMUTATIONS)"

bench-analysis: ## time tshark-based attach-time extraction vs per-packet pyshark, and ping parsing
	$(PYTHON) -m analysis bench --copies "$(BENCH_COPIES)" --ping-lines "$(BENCH_PING_LINES)" --workdir build/bench-analysis
