package apispec

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"go.yaml.in/yaml/v4"
)

// YAMLToJSON turns a YAML document into indented JSON with its mapping
// keys in the order the YAML has them, so the JSON the agent serves reads
// like docs/openapi.yaml (a map would sort them).
func YAMLToJSON(src []byte) ([]byte, error) {
	var doc yaml.Node
	if err := yaml.Unmarshal(src, &doc); err != nil {
		return nil, fmt.Errorf("parse YAML: %w", err)
	}
	var buf bytes.Buffer
	if err := writeNode(&buf, &doc, 0); err != nil {
		return nil, err
	}
	var out bytes.Buffer
	if err := json.Indent(&out, buf.Bytes(), "", "  "); err != nil {
		return nil, fmt.Errorf("indent the JSON: %w", err)
	}
	out.WriteByte('\n')
	return out.Bytes(), nil
}

// writeNode writes n as compact JSON. depth bounds alias chains.
func writeNode(buf *bytes.Buffer, n *yaml.Node, depth int) error {
	if depth > 200 {
		return errors.New("YAML nested too deeply (an alias cycle?)")
	}
	switch n.Kind {
	case yaml.DocumentNode:
		if len(n.Content) != 1 {
			return errors.New("YAML document is empty")
		}
		return writeNode(buf, n.Content[0], depth+1)
	case yaml.AliasNode:
		return writeNode(buf, n.Alias, depth+1)
	case yaml.MappingNode:
		buf.WriteByte('{')
		seen := map[string]bool{}
		for i := 0; i+1 < len(n.Content); i += 2 {
			k := n.Content[i]
			if k.Kind != yaml.ScalarNode {
				return fmt.Errorf("line %d: a mapping key must be a scalar", k.Line)
			}
			if seen[k.Value] {
				return fmt.Errorf("line %d: key %q appears twice", k.Line, k.Value)
			}
			seen[k.Value] = true
			if i > 0 {
				buf.WriteByte(',')
			}
			writeString(buf, k.Value)
			buf.WriteByte(':')
			if err := writeNode(buf, n.Content[i+1], depth+1); err != nil {
				return err
			}
		}
		buf.WriteByte('}')
	case yaml.SequenceNode:
		buf.WriteByte('[')
		for i, c := range n.Content {
			if i > 0 {
				buf.WriteByte(',')
			}
			if err := writeNode(buf, c, depth+1); err != nil {
				return err
			}
		}
		buf.WriteByte(']')
	case yaml.ScalarNode:
		var v any
		if err := n.Decode(&v); err != nil {
			return fmt.Errorf("line %d: %w", n.Line, err)
		}
		if s, ok := v.(string); ok {
			writeString(buf, s)
			return nil
		}
		b, err := json.Marshal(v)
		if err != nil {
			return fmt.Errorf("line %d: %v has no JSON form: %w", n.Line, v, err)
		}
		buf.Write(b)
	default:
		return fmt.Errorf("line %d: unexpected YAML node kind %v", n.Line, n.Kind)
	}
	return nil
}

// writeString writes s as a JSON string without HTML escaping (the
// description's prose has < and >, which need none in JSON).
func writeString(buf *bytes.Buffer, s string) {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	_ = enc.Encode(s) // a string always encodes
	buf.Write(bytes.TrimRight(b.Bytes(), "\n"))
}

// TicketSchemaName is the component of docs/openapi.yaml that is the ticket
// document; it and the components whose names start with TicketPrefix are
// docs/ticket.schema.json.
const (
	TicketSchemaName = "TicketDocument"
	TicketPrefix     = "Ticket"
	// TicketSchemaID is the $id of docs/ticket.schema.json.
	TicketSchemaID = "urn:printgate:ticket-document:v1"
)

// TicketSchema builds docs/ticket.schema.json from the description's JSON:
// the TicketDocument component at the top, the other Ticket* components
// under $defs, and every reference between them rewritten from
// #/components/schemas/X to #/$defs/X. Key order follows the description.
func TicketSchema(specJSON []byte) ([]byte, error) {
	var spec struct {
		Components struct {
			Schemas orderedObject `json:"schemas"`
		} `json:"components"`
	}
	if err := json.Unmarshal(specJSON, &spec); err != nil {
		return nil, fmt.Errorf("read the description: %w", err)
	}
	schemas := spec.Components.Schemas
	top, ok := schemas.get(TicketSchemaName)
	if !ok {
		return nil, fmt.Errorf("the description has no components.schemas.%s", TicketSchemaName)
	}
	var topObj orderedObject
	if err := json.Unmarshal(top, &topObj); err != nil {
		return nil, fmt.Errorf("components.schemas.%s: %w", TicketSchemaName, err)
	}
	var buf bytes.Buffer
	buf.WriteString(`{"$schema":"https://json-schema.org/draft/2020-12/schema","$id":`)
	writeString(&buf, TicketSchemaID)
	for _, kv := range topObj {
		buf.WriteByte(',')
		writeString(&buf, kv.key)
		buf.WriteByte(':')
		buf.Write(kv.val)
	}
	buf.WriteString(`,"$defs":{`)
	n := 0
	for _, kv := range schemas {
		if kv.key == TicketSchemaName || !strings.HasPrefix(kv.key, TicketPrefix) {
			continue
		}
		if n > 0 {
			buf.WriteByte(',')
		}
		n++
		writeString(&buf, kv.key)
		buf.WriteByte(':')
		buf.Write(kv.val)
	}
	buf.WriteString(`}}`)
	out := bytes.ReplaceAll(buf.Bytes(), []byte(`"#/components/schemas/`+TicketPrefix), []byte(`"#/$defs/`+TicketPrefix))
	if bytes.Contains(out, []byte(`#/components/`)) {
		return nil, errors.New("a Ticket* schema refers to a component that is not a Ticket* schema; the published ticket schema must stand alone")
	}
	var pretty bytes.Buffer
	if err := json.Indent(&pretty, out, "", "  "); err != nil {
		return nil, fmt.Errorf("indent the ticket schema: %w", err)
	}
	pretty.WriteByte('\n')
	return pretty.Bytes(), nil
}

// orderedObject is a JSON object read with its keys in order.
type orderedObject []keyVal

type keyVal struct {
	key string
	val json.RawMessage
}

func (o orderedObject) get(k string) (json.RawMessage, bool) {
	for _, kv := range o {
		if kv.key == k {
			return kv.val, true
		}
	}
	return nil, false
}

// UnmarshalJSON keeps the object's keys in order.
func (o *orderedObject) UnmarshalJSON(b []byte) error {
	dec := json.NewDecoder(bytes.NewReader(b))
	if tok, err := dec.Token(); err != nil || tok != json.Delim('{') {
		return errors.New("not a JSON object")
	}
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			return err
		}
		k, _ := tok.(string)
		var v json.RawMessage
		if err := dec.Decode(&v); err != nil {
			return err
		}
		*o = append(*o, keyVal{k, v})
	}
	_, err := dec.Token()
	return err
}
