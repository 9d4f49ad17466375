package native

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/fakhq/fak/engines/native/tokenizer"
)

// MaxBodyBytes bounds a request body.
const MaxBodyBytes = 8 << 20

// Server is the native engine's OpenAI-compatible HTTP API:
//
//	GET  /v1/models
//	POST /v1/chat/completions
//	POST /v1/completions          (prompt as text or as token ids)
//	GET  /healthz
//	GET  /metrics                 (Prometheus)
//	POST /fak/v1/cache/reset      (drop unpinned native_kv entries)
//	POST /fak/v1/sessions/{id}/evict  {"from": F, "count": N}
//
// Send X-Fak-Session: ID to keep a conversation's KV pinned under ID.
type Server struct {
	Engine  *Engine
	ModelID string
	Now     func() time.Time
	ids     atomic.Int64
}

// NewServer returns the handler for e, naming its model id.
func NewServer(e *Engine, id string) *Server {
	return &Server{Engine: e, ModelID: id, Now: time.Now}
}

// Handler returns the routed HTTP handler.
func (s *Server) Handler() http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("GET /v1/models", s.models)
	mux.HandleFunc("POST /v1/chat/completions", s.chat)
	mux.HandleFunc("POST /v1/completions", s.completions)
	mux.HandleFunc("GET /healthz", func(w http.ResponseWriter, r *http.Request) {
		writeJSON(w, 200, map[string]any{"status": "ok", "model": s.ModelID})
	})
	mux.Handle("GET /metrics", promhttp.HandlerFor(s.Engine.Metrics().Registry, promhttp.HandlerOpts{}))
	mux.HandleFunc("POST /fak/v1/cache/reset", s.resetCache)
	mux.HandleFunc("POST /fak/v1/sessions/{id}/evict", s.evict)
	mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		writeError(w, &apiError{Status: 404, Type: "invalid_request_error", Message: fmt.Sprintf("unknown endpoint %s %s", r.Method, r.URL.Path)})
	})
	return mux
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(v)
}

func writeError(w http.ResponseWriter, e *apiError) {
	writeJSON(w, e.Status, map[string]any{"error": e})
}

func (s *Server) models(w http.ResponseWriter, r *http.Request) {
	writeJSON(w, 200, map[string]any{"object": "list", "data": []map[string]any{{
		"id": s.ModelID, "object": "model", "created": 0, "owned_by": "fak",
		"context_length": s.Engine.Model.Context,
	}}})
}

// decode reads a JSON body into v with a size limit.
func decode(w http.ResponseWriter, r *http.Request, v any) *apiError {
	body := http.MaxBytesReader(w, r.Body, MaxBodyBytes)
	dec := json.NewDecoder(body)
	if err := dec.Decode(v); err != nil {
		var tooBig *http.MaxBytesError
		if errors.As(err, &tooBig) {
			return &apiError{Status: 413, Type: "invalid_request_error", Message: fmt.Sprintf("request body exceeds %d bytes", MaxBodyBytes)}
		}
		var se *json.SyntaxError
		if errors.As(err, &se) {
			return badRequest("", "invalid_json", "malformed JSON at byte offset %d: %v", se.Offset, err)
		}
		var te *json.UnmarshalTypeError
		if errors.As(err, &te) {
			return badRequest(te.Field, "invalid_type", "field %q: expected %s, got JSON %s (byte offset %d)", te.Field, te.Type, te.Value, te.Offset)
		}
		if errors.Is(err, io.EOF) {
			return badRequest("", "invalid_json", "request body is empty")
		}
		return badRequest("", "invalid_json", "malformed JSON: %v", err)
	}
	return nil
}

// plan is a validated request, ready for the engine.
type plan struct {
	req     Request
	stops   []string
	stream  bool
	usage   bool
	created int64
	id      string
}

func (s *Server) params(p *commonParams, prompt []int) (*plan, *apiError) {
	if p.Model != s.ModelID {
		if p.Model == "" {
			return nil, badRequest("model", "model_not_found", "model is required (this server serves %q)", s.ModelID)
		}
		return nil, badRequest("model", "model_not_found", "the model %q does not exist (this server serves %q)", p.Model, s.ModelID)
	}
	if p.N != nil && *p.N != 1 {
		return nil, badRequest("n", "unsupported_value", "n must be 1 (got %d)", *p.N)
	}
	stops, err := p.stops()
	if err != nil {
		return nil, badRequest("stop", "invalid_value", "%v", err)
	}
	if len(prompt) == 0 {
		return nil, badRequest("prompt", "invalid_value", "the prompt is empty")
	}
	ctx := s.Engine.Model.Context
	if len(prompt) >= ctx {
		return nil, badRequest("messages", "context_length_exceeded",
			"This model's maximum context length is %d tokens. However, your prompt resulted in %d tokens.", ctx, len(prompt))
	}
	pl := &plan{stops: stops, stream: p.Stream, usage: p.StreamOptions != nil && p.StreamOptions.IncludeUsage, created: s.Now().Unix()}
	pl.req.Tokens = prompt
	switch {
	case p.MaxCompletionTokens != nil:
		pl.req.MaxTokens = *p.MaxCompletionTokens
	case p.MaxTokens != nil:
		pl.req.MaxTokens = *p.MaxTokens
	default:
		pl.req.MaxTokens = 256
	}
	if pl.req.MaxTokens < 1 {
		return nil, badRequest("max_tokens", "invalid_value", "max_tokens must be at least 1 (got %d)", pl.req.MaxTokens)
	}
	pl.req.Sampling.Temperature = 1 // OpenAI's default
	if p.Temperature != nil {
		if *p.Temperature < 0 || *p.Temperature > 2 {
			return nil, badRequest("temperature", "invalid_value", "temperature must be within [0, 2] (got %v)", *p.Temperature)
		}
		pl.req.Sampling.Temperature = *p.Temperature
	}
	if p.TopP != nil {
		if *p.TopP <= 0 || *p.TopP > 1 {
			return nil, badRequest("top_p", "invalid_value", "top_p must be within (0, 1] (got %v)", *p.TopP)
		}
		pl.req.Sampling.TopP = *p.TopP
	}
	if p.TopK != nil {
		pl.req.Sampling.TopK = *p.TopK
	}
	if p.Seed != nil {
		pl.req.Sampling.Seed = uint64(*p.Seed)
	}
	return pl, nil
}

func (s *Server) chat(w http.ResponseWriter, r *http.Request) {
	var req chatRequest
	if e := decode(w, r, &req); e != nil {
		writeError(w, e)
		return
	}
	if len(req.Messages) == 0 {
		writeError(w, badRequest("messages", "invalid_value", "messages must be a non-empty array"))
		return
	}
	m := s.Engine.Model
	msgs := make([]tokenizer.Message, len(req.Messages))
	for i, msg := range req.Messages {
		text, err := msg.text()
		if err != nil {
			writeError(w, badRequest(fmt.Sprintf("messages[%d].content", i), "invalid_value", "messages[%d]: %v", i, err))
			return
		}
		switch msg.Role {
		case "system", "user", "assistant", "tool":
		case "developer":
			msg.Role = "system"
		default:
			writeError(w, badRequest(fmt.Sprintf("messages[%d].role", i), "invalid_value", "messages[%d].role %q is not one of system, developer, user, assistant, tool", i, msg.Role))
			return
		}
		msgs[i] = tokenizer.Message{Role: msg.Role, Content: text}
	}
	bos := ""
	if m.Tok.BOS >= 0 {
		bos = m.Tok.Tokens[m.Tok.BOS]
	}
	text := m.Template.Render(msgs, bos, true)
	prompt := m.Tok.Encode(text, m.Template != tokenizer.Llama3)
	pl, e := s.params(&req.commonParams, prompt)
	if e != nil {
		writeError(w, e)
		return
	}
	pl.stops = append(pl.stops, m.Template.TemplateStop())
	pl.id = fmt.Sprintf("chatcmpl-fak%d", s.ids.Add(1))
	s.run(w, r, pl, true)
}

func (s *Server) completions(w http.ResponseWriter, r *http.Request) {
	var req completionRequest
	if e := decode(w, r, &req); e != nil {
		writeError(w, e)
		return
	}
	prompt, err := s.promptTokens(req.Prompt)
	if err != nil {
		writeError(w, badRequest("prompt", "invalid_value", "%v", err))
		return
	}
	pl, e := s.params(&req.commonParams, prompt)
	if e != nil {
		writeError(w, e)
		return
	}
	pl.id = fmt.Sprintf("cmpl-fak%d", s.ids.Add(1))
	s.run(w, r, pl, false)
}

// promptTokens accepts a string, an array of token ids, or a one-element
// array of either.
func (s *Server) promptTokens(raw json.RawMessage) ([]int, error) {
	if len(raw) == 0 || string(raw) == "null" {
		return nil, errors.New("prompt is required")
	}
	var text string
	if json.Unmarshal(raw, &text) == nil {
		return s.Engine.Model.Tok.Encode(text, true), nil
	}
	var ids []int
	if json.Unmarshal(raw, &ids) == nil {
		for i, id := range ids {
			if id < 0 || id >= s.Engine.Model.Vocab {
				return nil, fmt.Errorf("prompt[%d] = %d is outside the vocabulary of %d tokens", i, id, s.Engine.Model.Vocab)
			}
		}
		return ids, nil
	}
	var batch []json.RawMessage
	if json.Unmarshal(raw, &batch) == nil {
		if len(batch) != 1 {
			return nil, fmt.Errorf("prompt batches of %d are not supported; send one prompt per request", len(batch))
		}
		return s.promptTokens(batch[0])
	}
	return nil, errors.New("prompt must be a string, an array of token ids, or a one-element array of either")
}

// run drives the engine and writes the response, streamed or whole.
func (s *Server) run(w http.ResponseWriter, r *http.Request, pl *plan, chat bool) {
	pl.req.Session = r.Header.Get("X-Fak-Session")
	ctx, cancel := context.WithCancel(r.Context())
	defer cancel()
	run, err := s.Engine.Generate(ctx, pl.req)
	if err != nil {
		switch {
		case errors.Is(err, ErrContextLength):
			writeError(w, badRequest("messages", "context_length_exceeded", "%v", err))
		case errors.Is(err, ErrSessionBusy):
			writeError(w, &apiError{Status: 409, Type: "invalid_request_error", Message: err.Error()})
		case errors.Is(err, ErrClosed):
			writeError(w, &apiError{Status: 503, Type: "server_error", Message: err.Error()})
		default:
			writeError(w, badRequest("", "", "%v", err))
		}
		return
	}
	out := newTextStream(s.Engine.Model.Tok, pl.stops)
	var emit func(string)
	var flusher http.Flusher
	if pl.stream {
		flusher, _ = w.(http.Flusher)
		w.Header().Set("Content-Type", "text/event-stream")
		w.Header().Set("Cache-Control", "no-cache")
		w.WriteHeader(200)
		emit = func(text string) {
			s.writeChunk(w, pl, chat, &text, nil)
			if flusher != nil {
				flusher.Flush()
			}
		}
		if chat {
			empty := ""
			s.writeChunkRole(w, pl, &empty)
			if flusher != nil {
				flusher.Flush()
			}
		}
	}
	var whole strings.Builder
	generated := 0
	stopped := false
	for tok := range run.Tokens {
		if stopped {
			continue // drain what the engine produced before it saw the cancel
		}
		generated++
		text, hit := out.add(tok)
		if pl.stream && text != "" {
			emit(text)
		}
		whole.WriteString(text)
		if hit {
			stopped = true
			cancel()
		}
	}
	res := run.Result()
	tail := ""
	if !stopped {
		tail = out.flush()
	}
	whole.WriteString(tail)
	finish := res.FinishReason
	switch {
	case stopped:
		finish = "stop"
	case finish == "cancelled" && r.Context().Err() != nil:
		return // the client went away
	case res.Err != nil:
		if pl.stream {
			fmt.Fprintf(w, "data: %s\n\n", mustJSON(map[string]any{"error": &apiError{Type: "server_error", Message: res.Err.Error()}}))
			return
		}
		writeError(w, &apiError{Status: 500, Type: "server_error", Message: res.Err.Error()})
		return
	}
	u := &usage{PromptTokens: res.PromptTokens, CompletionTokens: generated, TotalTokens: res.PromptTokens + generated}
	u.PromptTokensDetails.CachedTokens = res.CachedTokens
	if pl.stream {
		if tail != "" {
			emit(tail)
		}
		s.writeChunk(w, pl, chat, nil, &finish)
		if pl.usage {
			s.writeUsageChunk(w, pl, chat, u)
		}
		fmt.Fprint(w, "data: [DONE]\n\n")
		if flusher != nil {
			flusher.Flush()
		}
		return
	}
	text := whole.String()
	if chat {
		writeJSON(w, 200, chatResponse{ID: pl.id, Object: "chat.completion", Created: pl.created, Model: s.ModelID,
			SystemFingerprint: fingerprint, Usage: u,
			Choices: []chatChoice{{Message: &chatOut{Role: "assistant", Content: &text}, FinishReason: &finish}}})
		return
	}
	writeJSON(w, 200, completionResponse{ID: pl.id, Object: "text_completion", Created: pl.created, Model: s.ModelID,
		SystemFingerprint: fingerprint, Usage: u,
		Choices: []completionChoice{{Text: text, FinishReason: &finish}}})
}

const fingerprint = "fak-native"

func mustJSON(v any) []byte {
	b, err := json.Marshal(v)
	if err != nil {
		panic(err)
	}
	return b
}

func (s *Server) writeChunkRole(w io.Writer, pl *plan, content *string) {
	fmt.Fprintf(w, "data: %s\n\n", mustJSON(chatResponse{ID: pl.id, Object: "chat.completion.chunk", Created: pl.created,
		Model: s.ModelID, SystemFingerprint: fingerprint,
		Choices: []chatChoice{{Delta: &chatOut{Role: "assistant", Content: content}}}}))
}

// writeChunk writes one content delta or the final chunk with a finish
// reason. With include_usage every such chunk carries "usage": null.
func (s *Server) writeChunk(w io.Writer, pl *plan, chat bool, text, finish *string) {
	var v any
	if chat {
		delta := &chatOut{Content: text}
		c := chatResponse{ID: pl.id, Object: "chat.completion.chunk", Created: pl.created, Model: s.ModelID,
			SystemFingerprint: fingerprint, Choices: []chatChoice{{Delta: delta, FinishReason: finish}}}
		v = withNullUsage(c, pl.usage)
	} else {
		t := ""
		if text != nil {
			t = *text
		}
		c := completionResponse{ID: pl.id, Object: "text_completion", Created: pl.created, Model: s.ModelID,
			SystemFingerprint: fingerprint, Choices: []completionChoice{{Text: t, FinishReason: finish}}}
		v = withNullUsage(c, pl.usage)
	}
	fmt.Fprintf(w, "data: %s\n\n", mustJSON(v))
}

// withNullUsage adds "usage": null to a chunk when the client asked for
// usage, as OpenAI does on every chunk but the last.
func withNullUsage(v any, on bool) any {
	if !on {
		return v
	}
	var m map[string]any
	_ = json.Unmarshal(mustJSON(v), &m)
	m["usage"] = nil
	return m
}

func (s *Server) writeUsageChunk(w io.Writer, pl *plan, chat bool, u *usage) {
	if chat {
		fmt.Fprintf(w, "data: %s\n\n", mustJSON(chatResponse{ID: pl.id, Object: "chat.completion.chunk", Created: pl.created,
			Model: s.ModelID, SystemFingerprint: fingerprint, Choices: []chatChoice{}, Usage: u}))
		return
	}
	fmt.Fprintf(w, "data: %s\n\n", mustJSON(completionResponse{ID: pl.id, Object: "text_completion", Created: pl.created,
		Model: s.ModelID, SystemFingerprint: fingerprint, Choices: []completionChoice{}, Usage: u}))
}

func (s *Server) resetCache(w http.ResponseWriter, r *http.Request) {
	c := s.Engine.Cache()
	if c == nil {
		writeJSON(w, 200, map[string]any{"freed_tokens": 0, "cache": "disabled"})
		return
	}
	writeJSON(w, 200, map[string]any{"freed_tokens": c.Flush()})
}

func (s *Server) evict(w http.ResponseWriter, r *http.Request) {
	var body struct {
		From  *int `json:"from"`
		Count *int `json:"count"`
	}
	if e := decode(w, r, &body); e != nil {
		writeError(w, e)
		return
	}
	if body.From == nil || body.Count == nil {
		writeError(w, badRequest("from", "invalid_value", "from and count are required"))
		return
	}
	n, err := s.Engine.Evict(r.PathValue("id"), *body.From, *body.Count)
	if err != nil {
		status := 400
		switch {
		case errors.Is(err, ErrNoSession):
			status = 404
		case errors.Is(err, ErrSessionBusy):
			status = 409
		}
		writeError(w, &apiError{Status: status, Type: "invalid_request_error", Message: err.Error()})
		return
	}
	toks, _ := s.Engine.SessionTokens(r.PathValue("id"))
	writeJSON(w, 200, map[string]any{"recomputed_tokens": n, "session_tokens": len(toks)})
}
