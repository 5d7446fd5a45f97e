# The RAN study's published data analysed (analysis/ran_report.py; docs/analysis.md "RAN interfaces").
# RWTH_RESULTS: their results/ folder or the copy in tests/data (default).
RWTH_RESULTS ?= tests/data/rwth-internal-ran-security

.PHONY: report-rwth

report-rwth: ## the RAN paper's numbers from the authors' own files, their printed summaries recomputed: make report-rwth [RWTH_RESULTS=dir]
	$(PYTHON) -m analysis rwth "$(RWTH_RESULTS)" --out build/analysis/rwth
