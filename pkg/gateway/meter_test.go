package gateway

import (
	"fmt"
	"io"
	"strings"
	"testing"

	"turnwatch.dev/turnwatch/pkg/modelapi"
	"turnwatch.dev/turnwatch/pkg/monitor"
)

func TestEveryAPIHasAReader(t *testing.T) {
	for _, a := range modelapi.APIs {
		if meters[a.Name].read == nil {
			t.Errorf("no reader for %s", a.Name)
		}
	}
}

// served returns what the scripted model answers each API's request, as
// the client read it (a streamed and a whole answer of each).
func served(t *testing.T, scenario string) map[string]string {
	t.Helper()
	out := map[string]string{}
	for _, req := range requests {
		for _, stream := range []bool{true, false} {
			r := newRig(t, scenario, Options{})
			path := map[bool]string{true: req.path, false: req.wholePath}[stream]
			w := r.do(t, "POST", path, fmt.Sprintf(req.body, fmt.Sprint(stream)), nil)
			out[fmt.Sprintf("%s/%v", req.api, stream)] = w.Body.String()
		}
	}
	return out
}

// meterOf meters body as api's answer, fed in writes of size n (all at
// once when 0), and returns its message end and whether it was metered.
func meterOf(api string, sse bool, body string, n int) (monitor.ModelEvent, bool) {
	var end monitor.ModelEvent
	a := newAnswer(api, sse, false, func(e monitor.ModelEvent) { end = e })
	b := []byte(body)
	for n > 0 && len(b) > n {
		a.write(b[:n])
		b = b[n:]
	}
	a.write(b)
	metered := a.finish()
	return end, metered
}

// TestSplit checks an answer is metered alike however its bytes are cut.
func TestSplit(t *testing.T) {
	for key, body := range served(t, "identicalLoop") {
		api, stream, _ := strings.Cut(key, "/")
		whole, ok := meterOf(api, stream == "true", body, 0)
		if !ok || whole.Usage.Input != 1100 {
			t.Fatalf("%s: metered %v %+v", key, ok, whole)
		}
		for _, n := range []int{1, 2, 3, 7, 100} {
			if got, ok := meterOf(api, stream == "true", body, n); !ok || fmt.Sprint(got) != fmt.Sprint(whole) {
				t.Errorf("%s in writes of %d: %v %+v, want %+v", key, n, ok, got, whole)
			}
		}
	}
}

// TestUnmetered checks garbage and truncated answers are counted, end with
// one message end, and never crash.
func TestUnmetered(t *testing.T) {
	streams := served(t, "healthy")
	anthropic := streams[modelapi.NameAnthropic+"/true"]
	cut := strings.Index(anthropic, "event: message_delta")
	for _, tc := range []struct {
		name, api, body string
		sse             bool
		want            monitor.Usage
	}{
		{"garbage stream", modelapi.NameAnthropic, "data: {not json\n\ndata: \x00\xff\n\n", true, monitor.Usage{}},
		{"garbage whole", modelapi.NameResponses, "<html>502 Bad Gateway</html>", false, monitor.Usage{}},
		{"empty", modelapi.NameChat, "", true, monitor.Usage{}},
		{"cut before the usage", modelapi.NameAnthropic, anthropic[:cut], true, monitor.Usage{Input: 1100, Output: 1}},
		{"cut whole", modelapi.NameGemini, streams[modelapi.NameGemini+"/false"][:40], false, monitor.Usage{}},
		{"chat stream without the usage chunk", modelapi.NameChat,
			"data: {\"model\":\"m\",\"choices\":[{\"delta\":{\"content\":\"hi\"},\"finish_reason\":\"stop\"}]}\n\ndata: [DONE]\n\n", true, monitor.Usage{}},
		{"an event past the bound", modelapi.NameChat, "data: {\"model\":\"" + strings.Repeat("m", maxEvent) + "\"}\n\n", true, monitor.Usage{}},
		{"a whole answer past the bound", modelapi.NameChat, `{"model":"` + strings.Repeat("m", maxWhole) + `"}`, false, monitor.Usage{}},
		{"JSON of another shape", modelapi.NameGemini, `[1,2,{"candidates":"x"}]`, false, monitor.Usage{}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			end, metered := meterOf(tc.api, tc.sse, tc.body, 5)
			if metered || !end.End || end.Usage != tc.want {
				t.Errorf("metered %v, end %+v; want unmetered with %+v", metered, end, tc.want)
			}
		})
	}
}

// TestGeminiArray checks a Gemini stream sent as a JSON array (no
// alt=sse) is metered from its last chunk.
func TestGeminiArray(t *testing.T) {
	body := `[{"candidates":[{"content":{"parts":[{"text":"a"}]}}],"usageMetadata":{"promptTokenCount":10},"modelVersion":"g"},
	{"candidates":[{"content":{"parts":[{"text":"b","thought":true}]},"finishReason":"MAX_TOKENS"}],
	 "usageMetadata":{"promptTokenCount":30,"candidatesTokenCount":5,"cachedContentTokenCount":20,"thoughtsTokenCount":7}}]`
	end, metered := meterOf(modelapi.NameGemini, false, body, 0)
	want := monitor.ModelEvent{End: true, Model: "g", Stop: monitor.StopLength, Usage: monitor.Usage{Input: 10, CacheRead: 20, Output: 12}}
	if !metered || fmt.Sprint(end) != fmt.Sprint(want) {
		t.Errorf("metered %v %+v, want %+v", metered, end, want)
	}
}

// TestCached checks each API's cache counts land in the right fields, the
// input counted once.
func TestCached(t *testing.T) {
	for _, tc := range []struct {
		api, body string
		sse       bool
		want      monitor.Usage
	}{
		{modelapi.NameAnthropic, "event: message_start\ndata: {\"type\":\"message_start\",\"message\":{\"model\":\"c\",\"usage\":{\"input_tokens\":5,\"cache_creation_input_tokens\":100,\"cache_read_input_tokens\":200,\"output_tokens\":1}}}\n\n" +
			"event: message_delta\ndata: {\"type\":\"message_delta\",\"delta\":{\"stop_reason\":\"end_turn\"},\"usage\":{\"output_tokens\":40,\"cache_read_input_tokens\":300}}\n\n",
			true, monitor.Usage{Input: 5, Output: 40, CacheWrite: 100, CacheRead: 300}},
		{modelapi.NameResponses, `{"object":"response","model":"o","status":"completed","output":[],"usage":{"input_tokens":500,"input_tokens_details":{"cached_tokens":400},"output_tokens":9}}`,
			false, monitor.Usage{Input: 100, CacheRead: 400, Output: 9}},
		{modelapi.NameChat, `{"object":"chat.completion","model":"o","choices":[{"finish_reason":"stop"}],"usage":{"prompt_tokens":500,"prompt_tokens_details":{"cached_tokens":400},"completion_tokens":9}}`,
			false, monitor.Usage{Input: 100, CacheRead: 400, Output: 9}},
	} {
		end, metered := meterOf(tc.api, tc.sse, tc.body, 0)
		if !metered || end.Usage != tc.want {
			t.Errorf("%s: metered %v %+v, want %+v", tc.api, metered, end.Usage, tc.want)
		}
	}
}

// TestClientGone checks an answer the client stops reading is counted
// unmetered, with one message end.
func TestClientGone(t *testing.T) {
	var ends, unmetered int64
	a := newAnswer(modelapi.NameChat, true, false, func(e monitor.ModelEvent) { ends++ })
	b := &meteredBody{rc: io.NopCloser(strings.NewReader("data: {\"model\":\"m\"}\n\n")), a: a, unmetered: func(n int64) int64 { unmetered += n; return unmetered }}
	buf := make([]byte, 4)
	b.Read(buf)
	b.Close()
	b.Close()
	if ends != 1 || unmetered != 1 {
		t.Errorf("%d ends, %d unmetered", ends, unmetered)
	}
}

// FuzzAnswer feeds the meter anything, cut anywhere: it never panics and
// meters alike however the bytes are cut.
func FuzzAnswer(f *testing.F) {
	for _, body := range []string{"data: {\"type\":\"message_start\"}\n\n", `{"object":"response","usage":{}}`, `[{"usageMetadata":{}}]`, "data: [DONE]\n\n"} {
		f.Add(body, true, uint8(0), uint8(3))
	}
	f.Fuzz(func(t *testing.T, body string, sse bool, api, cut uint8) {
		name := modelapi.APIs[int(api)%len(modelapi.APIs)].Name
		whole, ok := meterOf(name, sse, body, 0)
		got, ok2 := meterOf(name, sse, body, int(cut)+1)
		if ok != ok2 || fmt.Sprint(whole) != fmt.Sprint(got) {
			t.Errorf("cut in %d: %v %+v; whole: %v %+v", cut+1, ok2, got, ok, whole)
		}
	})
}

// TestResponsesCallFromItems checks a tool call is the stop reason when
// only the streamed items say so (a compatible server's final response
// may list no output).
func TestResponsesCallFromItems(t *testing.T) {
	body := "data: {\"type\":\"response.output_item.added\",\"item\":{\"type\":\"function_call\",\"name\":\"exec\"}}\n\n" +
		"data: {\"type\":\"response.completed\",\"response\":{\"model\":\"o\",\"status\":\"completed\",\"output\":[],\"usage\":{\"input_tokens\":3,\"output_tokens\":2}}}\n\n"
	end, metered := meterOf(modelapi.NameResponses, true, body, 0)
	if !metered || end.Stop != monitor.StopToolUse || end.Usage.Input != 3 {
		t.Errorf("metered %v %+v", metered, end)
	}
}
