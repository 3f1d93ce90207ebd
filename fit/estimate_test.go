package fit

import (
	"bufio"
	"encoding/json"
	"math"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/detourhq/detour/llm"
)

// references reads testdata/reference.tsv: tokens[name][tokenizer].
func references(t *testing.T) map[string]map[string]int {
	t.Helper()
	f, err := os.Open(filepath.Join("testdata", "reference.tsv"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	refs := map[string]map[string]int{}
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		line := sc.Text()
		if strings.HasPrefix(line, "#") || line == "" {
			continue
		}
		p := strings.Split(line, "\t")
		n, err := strconv.Atoi(p[2])
		if len(p) != 3 || err != nil {
			t.Fatalf("reference.tsv: bad line %q", line)
		}
		if refs[p[0]] == nil {
			refs[p[0]] = map[string]int{}
		}
		refs[p[0]][p[1]] = n
	}
	if len(refs) == 0 {
		t.Fatal("reference.tsv: no references")
	}
	return refs
}

// families pairs each family with the reference tokenizers it must
// cover: its own (or its proxy), and every modern one for an unknown
// family.
var familyRefs = []struct {
	family     string
	tokenizers []string
}{
	{"gpt-4o", []string{"o200k"}},
	{"gpt-4", []string{"cl100k"}},
	{"llama-3.3-70b", []string{"llama3"}},
	{"gemini-2.5-flash", []string{"gemma3"}},
	{"deepseek-chat", []string{"deepseek_v3"}},
	{"qwen3-32b", []string{"qwen3"}},
	{"claude-sonnet-4", []string{"claude2"}},
	{"", []string{"o200k", "llama3", "gemma3", "deepseek_v3", "qwen3"}},
}

// within reports whether est is within relErr of ref both ways: the
// true count lies in est×(1±relErr), and |est-ref|/ref <= relErr.
func within(est, relErr, ref float64) bool {
	return math.Abs(est-ref) <= relErr*min(est, ref)+1e-9
}

// Each reference text's estimate, for each family, is within the
// relative error the estimator gives for it.
func TestEstimate_TextWithinItsErrorOfRealTokenizers(t *testing.T) {
	refs := references(t)
	texts := 0
	for name, byTok := range refs {
		if strings.HasPrefix(name, "chat/") {
			continue
		}
		texts++
		b, err := os.ReadFile(filepath.Join("testdata", name))
		if err != nil {
			t.Fatal(err)
		}
		for _, fr := range familyRefs {
			p := profileOf(fr.family)
			est, errTok := p.textCost(string(b))
			relErr := errTok / est
			for _, tok := range fr.tokenizers {
				ref, ok := byTok[tok]
				if !ok {
					t.Fatalf("%s: no %s count", name, tok)
				}
				if !within(est, relErr, float64(ref)) {
					t.Errorf("%s, family %q vs %s: estimate %.0f, real %d (%+.0f%%), relErr ±%.0f%%",
						name, fr.family, tok, est, ref, 100*(est-float64(ref))/float64(ref), 100*relErr)
				}
			}
		}
	}
	if texts < 30 {
		t.Errorf("%d reference texts, want the whole corpus and holdout", texts)
	}
}

// Whole conversations, framing included, as the chat templates render
// them: Estimate is within its relErr.
func TestEstimate_ChatWithinItsErrorOfRealTemplates(t *testing.T) {
	refs := references(t)
	b, err := os.ReadFile(filepath.Join("testdata", "chats.json"))
	if err != nil {
		t.Fatal(err)
	}
	var chats []struct {
		Name     string
		Messages []struct{ Role, File string }
	}
	if err := json.Unmarshal(b, &chats); err != nil {
		t.Fatal(err)
	}
	for _, c := range chats {
		req := &llm.Request{}
		for _, m := range c.Messages {
			text, err := os.ReadFile(filepath.Join("testdata", m.File))
			if err != nil {
				t.Fatal(err)
			}
			req.Messages = append(req.Messages, llm.Message{Role: llm.Role(m.Role), Content: string(text)})
		}
		for family, tok := range map[string]string{"gpt-4o": "o200k", "llama-3.3-70b": "llama3", "gemini-2.5-flash": "gemma3"} {
			ref := refs["chat/"+c.Name][tok]
			est, relErr := Estimate(req, family)
			if ref == 0 || !within(float64(est), relErr, float64(ref)) {
				t.Errorf("chat %s, %s: estimate %d ±%.0f%%, real %d", c.Name, family, est, 100*relErr, ref)
			}
			t.Logf("chat %-12s %-16s estimate %5d real %5d (%+5.1f%%) relErr ±%.0f%%",
				c.Name, family, est, ref, 100*float64(est-ref)/float64(ref), 100*relErr)
		}
	}
}

// The measured error, for the record: go test -run Report -v ./fit/.
func TestEstimate_ReportErrors(t *testing.T) {
	refs := references(t)
	for _, fr := range familyRefs {
		worst, worstScript, sum, n := 0.0, 0.0, 0.0, 0
		worstName := ""
		for name, byTok := range refs {
			if strings.HasPrefix(name, "chat/") {
				continue
			}
			b, err := os.ReadFile(filepath.Join("testdata", name))
			if err != nil {
				t.Fatal(err)
			}
			est, _ := profileOf(fr.family).textCost(string(b))
			c := scan(string(b))
			for _, tok := range fr.tokenizers {
				e := (est - float64(byTok[tok])) / float64(byTok[tok])
				sum += math.Abs(e)
				n++
				if c.indic+c.otherScript > 0 {
					worstScript = max(worstScript, math.Abs(e))
					continue
				}
				if math.Abs(e) > math.Abs(worst) {
					worst, worstName = e, name+" "+tok
				}
			}
		}
		p := profileOf(fr.family)
		t.Logf("%-18q mean |err| %4.1f%%  worst %+5.1f%% (%s)  textErr ±%.0f%%; Arabic, Hindi worst ±%.0f%%, scriptErr ±%.0f%%",
			fr.family, 100*sum/float64(n), 100*worst, worstName, 100*p.textErr, 100*worstScript, 100*p.scriptErr)
	}
}

func TestEstimate_FamiliesAndEdges(t *testing.T) {
	for family, want := range map[string]string{
		"gpt-4o-mini": "o200k", "GPT-4.1": "o200k", "o3-mini": "o200k", "gpt-4-turbo": "cl100k",
		"llama-3.3-70b": "llama3", "meta-llama/Llama-3.3-70B-Instruct-Turbo": "llama3",
		"accounts/fireworks/models/llama-v3p3-70b-instruct": "llama3",
		"gemini-2.5-flash": "gemini", "claude-haiku-4-5": "claude", "deepseek-chat": "deepseek",
		"qwen2.5:7b": "qwen", "mistral-small": "unknown", "grok-3-mini": "unknown", "": "unknown",
	} {
		if got := profileOf(family).name; got != want {
			t.Errorf("profileOf(%q) = %s, want %s", family, got, want)
		}
	}
	if n, e := Estimate(nil, ""); n != 0 || e != 0 {
		t.Errorf("Estimate(nil) = %d, %v", n, e)
	}
	empty, _ := Estimate(&llm.Request{}, "gpt-4o")
	one, _ := Estimate(&llm.Request{Messages: []llm.Message{{Role: llm.RoleUser}}}, "gpt-4o")
	if empty != 3 || one != 7 {
		t.Errorf("framing: empty request %d tokens, one empty message %d; want 3 and 7 (gpt-4o's template)", empty, one)
	}
	// Tools cost their definitions, and Claude its tool-use prompt.
	tools := &llm.Request{Messages: []llm.Message{{Role: llm.RoleUser, Content: "hi"}},
		Tools: []llm.Tool{{Name: "search_flights", Description: "Search flights.",
			Parameters: json.RawMessage(`{"type":"object","properties":{"origin":{"type":"string"}}}`)}}}
	plain := &llm.Request{Messages: tools.Messages}
	for _, fam := range []string{"gpt-4o", "claude-sonnet-4"} {
		a, _ := Estimate(tools, fam)
		b, _ := Estimate(plain, fam)
		if a-b < 30 || fam == "claude-sonnet-4" && a-b < 346 {
			t.Errorf("%s: tools add %d tokens", fam, a-b)
		}
	}
}

// Japanese costs about a token a character or less, far more than its
// UTF-8 bytes over four would say, and more than the same number of
// English characters.
func TestEstimate_CJKIsPricedPerCharacter(t *testing.T) {
	ja := strings.Repeat("昔々、山あいの小さな村に、ひとりの年老いた鍛冶屋が住んでいました。", 20)
	en := strings.Repeat("Once upon a time, an old smith lived in a small mountain village. ", 20)
	for _, fam := range []string{"gpt-4o", "llama-3.3-70b", "gemini-2.5-flash", ""} {
		j, _ := profileOf(fam).textCost(ja)
		e, _ := profileOf(fam).textCost(en)
		chars := float64(len([]rune(ja)))
		if j < 0.5*chars || j > 1.3*chars || j < 1.5*e*chars/float64(len(en)) {
			t.Errorf("%s: %0.f tokens for %0.f Japanese characters (English, per char: %.2f)", fam, j, chars, e/float64(len(en)))
		}
	}
}

func TestEstimate_AllocatesNothing(t *testing.T) {
	req := conversation(50)
	if n := testing.AllocsPerRun(100, func() { Estimate(req, "llama-3.3-70b") }); n != 0 {
		t.Errorf("Estimate allocates %v times per call", n)
	}
}

func TestEstimate_MediaAllocatesNothing(t *testing.T) {
	png := "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNkYPhfDwAChwGA60e6kgAAAABJRU5ErkJggg=="
	req := &llm.Request{Messages: []llm.Message{{Role: llm.RoleUser, Content: "look", Parts: []llm.Part{
		{Kind: llm.PartImage, MediaType: "image/png", Data: png},
		{Kind: llm.PartImage, URL: "https://example.com/a.jpg"},
		{Kind: llm.PartDocument, MediaType: "text/plain", Title: "notes", Text: "some notes"},
		{Kind: llm.PartDocument, MediaType: "application/pdf", Data: "JVBERi0xLjQK"},
		{Kind: llm.PartAudio, MediaType: "audio/wav", Data: "UklGRgAAAABXQVZFZm10IA=="},
	}}}}
	if n := testing.AllocsPerRun(100, func() { Estimate(req, "") }); n != 0 {
		t.Errorf("Estimate allocates %v times per call with media", n)
	}
}
