package main

// tool is a full MCP tool object, so that replay pins each definition.
type tool struct {
	Name        string         `json:"name"`
	Description string         `json:"description"`
	InputSchema map[string]any `json:"inputSchema"`
}

func str(desc string) map[string]any {
	return map[string]any{"type": "string", "description": desc}
}

func object(props map[string]any, required ...string) map[string]any {
	o := map[string]any{"type": "object", "properties": props, "additionalProperties": false}
	if len(required) > 0 {
		o["required"] = required
	}
	return o
}

// tools are the desk server's tools, the same in every session: a
// changed definition would be a pinning case, which this corpus is not.
func tools() []tool {
	return []tool{
		{"web_search", "Search the web and return the top results with their titles, URLs and snippets.",
			object(map[string]any{"query": str("The search terms.")}, "query")},
		{"fetch", "Fetch a web page over HTTPS and return its readable text.",
			object(map[string]any{"url": map[string]any{"type": "string", "format": "uri", "description": "The absolute URL of the page."}}, "url")},
		{"read_inbox", "Read the most recent messages in the user's inbox, newest first.",
			object(map[string]any{"limit": map[string]any{"type": "integer", "minimum": 1, "maximum": 50, "description": "How many messages to return."}})},
		{"send_email", "Send an email from the user's account.",
			object(map[string]any{
				"to":      str("Recipient address."),
				"cc":      map[string]any{"type": "array", "items": map[string]any{"type": "string"}, "description": "Copy recipients."},
				"subject": str("Subject line."),
				"body":    str("Plain-text body."),
			}, "to", "subject", "body")},
		{"get_case", "Look up the user's open case with an organisation: the case record, the office handling it, and the notes staff and the customer added.",
			object(map[string]any{"organisation": str("The organisation's name.")}, "organisation")},
		{"submit_form", "Submit a web form: POST the given fields to the form's URL.",
			object(map[string]any{
				"url":    map[string]any{"type": "string", "format": "uri", "description": "The form's action URL."},
				"fields": map[string]any{"type": "object", "description": "Form fields by name; a section of the form is a nested object."},
			}, "url", "fields")},
	}
}
