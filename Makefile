# flink-jobgraph: `make demo` installs everything and runs the job on samples/;
# `make test` runs the test suite. Both install first when needed.
PYTHON ?= python3.11
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed
JARS_STAMP := .cache/jars/.installed
# The project's own JVM function (jvm/: a ranged file read for Spark's executors), compiled
# against the pinned pyspark's own jars, so it needs nothing from the network.
SPARK_JAR := .cache/jars/flink-jobgraph-spark.jar
JAVA_SOURCES := $(shell find jvm/src -name '*.java')
# The driver JVM's class-data-sharing archive (pipeline/session.py): Spark's classes mapped at
# start instead of loaded from the jars, dumped once by a run on the samples; its name
# (pipeline/session.py: cds_archive) says which jars it was dumped with, so a rebuilt jar
# gets a new one.
CDS_STAMP := .cache/jvm/.installed

.PHONY: install demo test lint bench clean

install: $(STAMP) $(JARS_STAMP) $(SPARK_JAR) $(CDS_STAMP)
	@# Graphviz (dot lays out `flink-jobgraph render`) and Chromium (tests/test_render.py), from Debian.
	@command -v dot >/dev/null && command -v chromium >/dev/null || \
		{ apt-get update -q && apt-get install -y -q --no-install-recommends graphviz chromium; }

$(STAMP): pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install -q --upgrade pip
	$(BIN)/pip install -q -e ".[dev]"
	touch $@

# Delta Lake jars, pinned in conf/jvm/pom.xml, from Maven Central into .cache/jars; the
# GraphFrames jar, pinned by sha256 in conf/jvm/graphframes.json, from PyPI (see that file).
$(JARS_STAMP): conf/jvm/pom.xml conf/jvm/graphframes.json scripts/install_graphframes.py $(STAMP)
	mvn -q -f conf/jvm/pom.xml dependency:copy-dependencies -DoutputDirectory=$(CURDIR)/.cache/jars -DexcludeTransitive=true
	$(BIN)/python scripts/install_graphframes.py --dest $(CURDIR)/.cache/jars
	touch $@

$(SPARK_JAR): $(JAVA_SOURCES) $(STAMP)
	rm -rf .cache/jvm-classes && mkdir -p .cache/jvm-classes .cache/jars
	javac -nowarn --release 8 -d .cache/jvm-classes \
		-cp "$$($(BIN)/python -c 'import os, pyspark; print(os.path.join(os.path.dirname(pyspark.__file__), "jars"))')/*" \
		$(JAVA_SOURCES)
	jar cf $@ -C .cache/jvm-classes .

$(CDS_STAMP): $(STAMP) $(JARS_STAMP) $(SPARK_JAR) scripts/spark_cds.py pipeline/session.py
	SPARK_LOCAL_IP=$${SPARK_LOCAL_IP:-127.0.0.1} $(BIN)/python scripts/spark_cds.py
	touch $@

demo: install
	rm -rf out/demo
	$(BIN)/flink-jobgraph compute --input samples --output out/demo
	$(BIN)/python -m devtools.queries out/demo

test: install
	$(BIN)/python -m pytest -q

lint: install
	$(BIN)/ruff check pipeline udfs tests jobs scripts bench

clean:
	rm -rf out spark-warehouse .pytest_cache
