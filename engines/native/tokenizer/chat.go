package tokenizer

import (
	"strings"
)

// Message is one chat turn, already flattened to text.
type Message struct {
	Role    string
	Content string
}

// Template is a chat prompt format.
type Template string

// The chat formats the native engine renders. GGUF files carry a Jinja
// template in tokenizer.chat_template; the engine recognises the family and
// renders it natively rather than running Jinja.
const (
	ChatML Template = "chatml"
	Llama2 Template = "llama2"
	Llama3 Template = "llama3"
)

// DetectTemplate maps a tokenizer.chat_template string to a family; an
// empty or unrecognised template falls back to ChatML.
func DetectTemplate(jinja string) Template {
	switch {
	case strings.Contains(jinja, "<|start_header_id|>"):
		return Llama3
	case strings.Contains(jinja, "[INST]"):
		return Llama2
	}
	return ChatML
}

// Render formats messages and, when generation follows, the opening of the
// assistant turn.
func (tpl Template) Render(msgs []Message, bos string, addGenerationPrompt bool) string {
	var sb strings.Builder
	switch tpl {
	case Llama3:
		sb.WriteString(bos)
		for _, m := range msgs {
			sb.WriteString("<|start_header_id|>" + m.Role + "<|end_header_id|>\n\n" + strings.TrimSpace(m.Content) + "<|eot_id|>")
		}
		if addGenerationPrompt {
			sb.WriteString("<|start_header_id|>assistant<|end_header_id|>\n\n")
		}
	case Llama2:
		system := ""
		for _, m := range msgs {
			switch m.Role {
			case "system":
				system = "<<SYS>>\n" + m.Content + "\n<</SYS>>\n\n"
			case "assistant":
				sb.WriteString(" " + strings.TrimSpace(m.Content) + " </s>")
			default:
				sb.WriteString("<s>[INST] " + system + strings.TrimSpace(m.Content) + " [/INST]")
				system = ""
			}
		}
	default:
		for _, m := range msgs {
			sb.WriteString("<|im_start|>" + m.Role + "\n" + m.Content + "<|im_end|>\n")
		}
		if addGenerationPrompt {
			sb.WriteString("<|im_start|>assistant\n")
		}
	}
	return sb.String()
}

// TemplateStop is the text that ends an assistant turn in tpl, for models
// whose vocabulary has no control token for it.
func (tpl Template) TemplateStop() string {
	switch tpl {
	case Llama3:
		return "<|eot_id|>"
	case Llama2:
		return "</s>"
	}
	return "<|im_end|>"
}
