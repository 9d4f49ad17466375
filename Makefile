# fak — the two commands of a fresh machine are `make run` and `make test`.
GO       ?= go
VERSION  ?= $(shell git describe --tags --always --dirty 2>/dev/null || echo dev)
COMMIT   ?= $(shell git rev-parse HEAD 2>/dev/null || echo unknown)
LDFLAGS  := -X main.version=$(VERSION) -X main.commit=$(COMMIT)
BIN      := bin/fak
ADDR     ?= 127.0.0.1:8080

.PHONY: run build test bench lint fuzz clean

## run: serve the native engine on the embedded default model (generated once)
run: build
	$(BIN) serve --engine native --addr $(ADDR)

build:
	$(GO) build -ldflags "$(LDFLAGS)" -o $(BIN) ./cmd/fak

## test: lint, then every unit and integration test (under a minute on 2 cores)
test: lint
	$(GO) test -count=1 -timeout 15m ./...

## bench: prefill/decode tok/s of the small preset (f32, q8_0; 1 and 8 requests)
bench:
	$(GO) test -run '^$$' -bench . -benchtime 1x -timeout 60m ./engines/native/...

## lint: gofmt check and go vet
lint:
	@out=$$(gofmt -l $$(git ls-files '*.go' 2>/dev/null || find . -name '*.go')); \
	if [ -n "$$out" ]; then echo "gofmt would change:"; echo "$$out"; exit 1; fi
	$(GO) vet ./...

## fuzz: run the GGUF reader fuzz target for a minute
fuzz:
	$(GO) test -run '^$$' -fuzz FuzzParse -fuzztime 60s ./engines/native/gguf

clean:
	rm -rf bin
