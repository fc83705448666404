package monitor

import (
	"bytes"
	_ "embed"
	"encoding/json"
	"fmt"
	"maps"
	"math"
	"slices"
	"strconv"
	"strings"
	"sync"
	"unsafe"
)

//go:embed prices.json
var defaultPricesJSON []byte

// Prices is the per-model price table used to price formats that report
// only tokens (claude, codex). It is data: the default is the embedded
// prices.json (with the date its rates were read and where from); a
// --prices file or the cluster config overrides it model by model.
type Prices struct {
	// ReadAt is the date the rates were read.
	ReadAt string `json:"readAt,omitempty"`
	// Unit documents the unit of the rates (USD per million tokens).
	Unit string `json:"unit,omitempty"`
	// Note says where the rates come from.
	Note string `json:"note,omitempty"`
	// DefaultModel names the model assumed for a format whose stream names
	// none (codex exec --json does not print its model).
	DefaultModel map[string]string `json:"defaultModel,omitempty"`
	// Models maps a model name (or name prefix) to its rates.
	Models map[string]ModelPrice `json:"models"`
	// MaxMessageTokens bounds what one model message can take in and
	// write: a report beyond it, in tokens or in dollars at the model's
	// rates, is no model's (docs/design.md#implausible-costs).
	MaxMessageTokens TokenCeiling `json:"maxMessageTokens"`

	sorted []string // model keys, longest first, for prefix lookup
	// top are the highest rates of the table, bucket by bucket: what a
	// model the table does not price may cost at most (ceilings only).
	top ModelPrice
}

// TokenCount is a number of tokens. Its JSON form is a number in any
// spelling (2000000, 2e+06: the chart's YAML renders big numbers so) or a
// decimal string, of a whole number.
type TokenCount int64

// UnmarshalJSON reads a whole number of tokens.
func (n *TokenCount) UnmarshalJSON(b []byte) error {
	if string(b) == "null" { // none set: the embedded table's
		return nil
	}
	s := strings.Trim(string(b), `"`)
	f, err := strconv.ParseFloat(s, 64)
	if err != nil || f != math.Trunc(f) || f < 0 || f > 1e15 {
		return fmt.Errorf("%s is not a whole number of tokens up to 1e15", b)
	}
	*n = TokenCount(f)
	return nil
}

// TokenCeiling is the most tokens one model message takes in (input,
// cache reads and cache writes together) and writes (output).
type TokenCeiling struct {
	Input  TokenCount `json:"input"`
	Output TokenCount `json:"output"`
	// Why says where the figures come from.
	Why string `json:"why,omitempty"`
}

// ModelPrice is one model's rates in USD per million tokens.
type ModelPrice struct {
	Input      Money  `json:"input"`
	Output     Money  `json:"output"`
	CacheRead  Money  `json:"cacheRead,omitempty"`
	CacheWrite Money  `json:"cacheWrite,omitempty"`
	Source     string `json:"source,omitempty"`
}

// defaultPrices is the embedded table, parsed once; engines share it
// read-only.
var defaultPrices = sync.OnceValue(func() Prices {
	p, err := parsePricesOnly(defaultPricesJSON)
	if err != nil {
		panic("monitor: embedded prices.json: " + err.Error())
	}
	return p
})

// DefaultPrices returns a copy of the embedded table that the caller may
// change.
func DefaultPrices() Prices {
	p := defaultPrices()
	p.DefaultModel = maps.Clone(p.DefaultModel)
	p.Models = maps.Clone(p.Models)
	p.sorted = slices.Clone(p.sorted)
	return p
}

// ParsePrices reads a price table (the shape of prices.json) and merges it
// over DefaultPrices: a model given here replaces the default entry of the
// same name, the others stay. A bad rate is an error naming the model.
// An empty table is DefaultPrices: a sidecar's env that sets none (an
// attached Pod's, when the namespace's parameters hold no prices).
func ParsePrices(data []byte) (Prices, error) {
	if len(bytes.TrimSpace(data)) == 0 {
		return DefaultPrices(), nil
	}
	over, err := parsePricesOnly(data)
	if err != nil {
		return Prices{}, err
	}
	p := DefaultPrices()
	if over.ReadAt != "" {
		p.ReadAt = over.ReadAt
	}
	if over.Note != "" {
		p.Note = over.Note
	}
	for k, v := range over.DefaultModel {
		p.DefaultModel[k] = v
	}
	for k, v := range over.Models {
		p.Models[k] = v
	}
	if over.MaxMessageTokens.Input > 0 {
		p.MaxMessageTokens.Input = over.MaxMessageTokens.Input
	}
	if over.MaxMessageTokens.Output > 0 {
		p.MaxMessageTokens.Output = over.MaxMessageTokens.Output
	}
	p.index()
	return p, nil
}

func parsePricesOnly(data []byte) (Prices, error) {
	var raw struct {
		ReadAt       string                     `json:"readAt"`
		Unit         string                     `json:"unit"`
		Note         string                     `json:"note"`
		DefaultModel map[string]string          `json:"defaultModel"`
		Models       map[string]json.RawMessage `json:"models"`
		Max          TokenCeiling               `json:"maxMessageTokens"`
	}
	if err := json.Unmarshal(data, &raw); err != nil {
		return Prices{}, fmt.Errorf("prices: not a price table: %w", err)
	}
	p := Prices{ReadAt: raw.ReadAt, Unit: raw.Unit, Note: raw.Note,
		DefaultModel: map[string]string{}, Models: map[string]ModelPrice{}, MaxMessageTokens: raw.Max}
	for k, v := range raw.DefaultModel {
		p.DefaultModel[k] = v
	}
	for name, v := range raw.Models {
		var mp ModelPrice
		if err := json.Unmarshal(v, &mp); err != nil {
			return Prices{}, fmt.Errorf("prices: models.%s: rates must be decimal strings like \"3.00\": %w", name, err)
		}
		if mp.Input < 0 || mp.Output < 0 || mp.CacheRead < 0 || mp.CacheWrite < 0 {
			return Prices{}, fmt.Errorf("prices: models.%s: rates must not be negative", name)
		}
		p.Models[name] = mp
	}
	p.index()
	return p, nil
}

func (p *Prices) index() {
	p.sorted = make([]string, 0, len(p.Models)) // never the backing array of a copy
	p.top = ModelPrice{}
	for k, mp := range p.Models {
		p.sorted = append(p.sorted, k)
		p.top.Input, p.top.Output = max(p.top.Input, mp.Input), max(p.top.Output, mp.Output)
		p.top.CacheRead, p.top.CacheWrite = max(p.top.CacheRead, mp.CacheRead), max(p.top.CacheWrite, mp.CacheWrite)
	}
	slices.SortFunc(p.sorted, func(a, b string) int {
		if len(a) != len(b) {
			return len(b) - len(a)
		}
		return strings.Compare(a, b)
	})
}

// lookup finds the rates for model by longest prefix. It does not allocate.
func (p *Prices) lookup(model []byte) (ModelPrice, bool) {
	if p.sorted == nil && len(p.Models) > 0 {
		p.index()
	}
	for _, k := range p.sorted {
		if len(model) >= len(k) && string(model[:len(k)]) == k {
			return p.Models[k], true
		}
	}
	return ModelPrice{}, false
}

// tokens is one report of token usage, in the buckets the tables price.
type tokens struct {
	input, output, cacheRead, cacheWrite int64
}

func (t tokens) price(mp ModelPrice) Money {
	return mulTokens(t.input, mp.Input).
		Add(mulTokens(t.output, mp.Output)).
		Add(mulTokens(t.cacheRead, mp.CacheRead)).
		Add(mulTokens(t.cacheWrite, mp.CacheWrite))
}

// priceTokens prices usage with the model named, else the session's model,
// else the format's default model. Unknown models cost nothing.
func (e *Engine) priceTokens(model []byte, t tokens) Money {
	mp, _ := e.rates(model)
	return t.price(mp)
}

// rates are the rates of the model named, else of the session's model,
// else of the format's default model; ok is false for a model the table
// does not price.
func (e *Engine) rates(model []byte) (ModelPrice, bool) {
	if len(model) == 0 {
		model = e.f.SessionModel.bytes()
	}
	if len(model) == 0 {
		if m, ok := e.prices.DefaultModel[e.f.Active]; ok {
			model = unsafe.Slice(unsafe.StringData(m), len(m))
		}
	}
	pc := &e.priceCache
	if !pc.ok || !bytes.Equal(pc.model.bytes(), model) {
		pc.model.set(model)
		pc.price, pc.known = e.prices.lookup(model)
		pc.ok = true
	}
	return pc.price, pc.known
}

// merge folds a usage report into a message's tokens. Within one message
// the counts only grow, so each bucket keeps the largest value reported:
// repeated or reordered reports (an assistant line after message_delta)
// neither add up nor lower the cost.
func (t *tokens) merge(u tokens, set tokenFields) {
	if set&tokIn != 0 {
		t.input = max(t.input, u.input)
	}
	if set&tokOut != 0 {
		t.output = max(t.output, u.output)
	}
	if set&tokCacheRead != 0 {
		t.cacheRead = max(t.cacheRead, u.cacheRead)
	}
	if set&tokCacheWrite != 0 {
		t.cacheWrite = max(t.cacheWrite, u.cacheWrite)
	}
}

// Price is what usage costs at the rates of model (its longest priced
// prefix), as the engine prices a model message the gateway metered;
// nothing for a model the table does not price.
func (p Prices) Price(model string, u Usage) Money {
	mp, _ := p.lookup([]byte(model))
	return usageTokens(u).price(mp)
}
