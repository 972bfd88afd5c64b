package export

import (
	"encoding/json"
	"fmt"
	"strconv"
)

// flat is what the index reads of a jsonl event, or of a HEC event's
// event.
type flat struct {
	Log      *string          `json:"log"`
	Seq      json.Number      `json:"seq"`
	Verified string           `json:"verified"`
	Line     *json.RawMessage `json:"line"`
}

// probe is what the index reads of a line of any format.
type probe struct {
	flat
	ResourceLogs []struct {
		ScopeLogs []struct {
			LogRecords []struct {
				Attributes []struct {
					Key   string `json:"key"`
					Value struct {
						String *string `json:"stringValue"`
						Int    any     `json:"intValue"`
					} `json:"value"`
				} `json:"attributes"`
			} `json:"logRecords"`
		} `json:"scopeLogs"`
	} `json:"resourceLogs"`
	Event      *flat   `json:"event"`
	Sourcetype *string `json:"sourcetype"`
}

func (p *probe) format() (Format, bool) {
	switch {
	case p.ResourceLogs != nil:
		return OTLP, true
	case p.Event != nil && p.Sourcetype != nil:
		return SplunkHEC, true
	case p.Log != nil && p.Line != nil:
		return JSONL, true
	}
	return "", false
}

func (p *probe) key(f Format) (Key, Level, error) {
	switch f {
	case SplunkHEC:
		return p.Event.key()
	case OTLP:
		var fl flat
		if rl := p.ResourceLogs; len(rl) == 1 && len(rl[0].ScopeLogs) == 1 && len(rl[0].ScopeLogs[0].LogRecords) == 1 {
			for _, a := range rl[0].ScopeLogs[0].LogRecords[0].Attributes {
				switch {
				case a.Key == "bailiff.log" && a.Value.String != nil:
					fl.Log = a.Value.String
				case a.Key == "bailiff.verified" && a.Value.String != nil:
					fl.Verified = *a.Value.String
				case a.Key == "bailiff.seq":
					fl.Seq = json.Number(fmt.Sprint(a.Value.Int)) // OTLP/JSON writes it as a string
				}
			}
		}
		return fl.key()
	}
	return p.flat.key()
}

func (fl *flat) key() (Key, Level, error) {
	seq, err := strconv.ParseInt(string(fl.Seq), 10, 64)
	if fl.Log == nil || *fl.Log == "" || err != nil || seq < 0 || Level(fl.Verified).rank() < 0 {
		return Key{}, "", errNoKey
	}
	return Key{*fl.Log, seq}, Level(fl.Verified), nil
}
