// Command summarycheck decodes denolet's JSON with upstream Kubernetes' own Go
// types, refusing any field those types do not have, and prints the JSON
// re-encoded from the decoded value. It is how the integration tests prove
// that /stats/summary (k8s.io/kubelet stats/v1alpha1.Summary) and /pods
// (k8s.io/api core/v1.PodList) are what upstream consumers will read.
//
// Usage:
//
//	curl -s localhost:10255/stats/summary | summarycheck [-only-cpu-and-memory]
//	curl -s localhost:10255/pods | summarycheck -kind=podlist
//
// Exit status 0 with the re-encoded JSON on stdout; 1 with the decode error on
// stderr; 2 on a usage error.
package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"

	corev1 "k8s.io/api/core/v1"
	statsv1alpha1 "k8s.io/kubelet/pkg/apis/stats/v1alpha1"
)

func main() {
	kind := flag.String("kind", "summary", `what stdin holds: "summary" (stats/v1alpha1.Summary) or "podlist" (core/v1.PodList)`)
	onlyCPUAndMemory := flag.Bool("only-cpu-and-memory", false, "stdin is /stats/summary?only_cpu_and_memory=true (changes only the messages)")
	flag.Parse()

	what := "Summary"
	if *onlyCPUAndMemory {
		what = "Summary (only_cpu_and_memory=true)"
	}
	var target any
	switch *kind {
	case "summary":
		target = &statsv1alpha1.Summary{}
	case "podlist":
		target = &corev1.PodList{}
		what = "PodList"
	default:
		fmt.Fprintf(os.Stderr, "summarycheck: unknown -kind %q (want summary or podlist)\n", *kind)
		os.Exit(2)
	}

	out, err := check(os.Stdin, target)
	if err != nil {
		fmt.Fprintf(os.Stderr, "summarycheck: %s rejected by upstream types: %v\n", what, err)
		os.Exit(1)
	}
	if _, err := os.Stdout.Write(out); err != nil {
		fmt.Fprintf(os.Stderr, "summarycheck: writing %s: %v\n", what, err)
		os.Exit(1)
	}
}

// check decodes exactly one JSON value from r into target with unknown
// fields refused, and returns target re-encoded.
func check(r io.Reader, target any) ([]byte, error) {
	var input bytes.Buffer
	dec := json.NewDecoder(io.TeeReader(r, &input))
	dec.DisallowUnknownFields()
	if err := dec.Decode(target); err != nil {
		return nil, fmt.Errorf("decode: %w", err)
	}
	// Trailing data means stdin was not one JSON document.
	var extra json.RawMessage
	if err := dec.Decode(&extra); !errors.Is(err, io.EOF) {
		if err == nil {
			err = errors.New("more than one JSON value")
		}
		return nil, fmt.Errorf("after the document: %w", err)
	}
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	if err := enc.Encode(target); err != nil {
		return nil, fmt.Errorf("re-encode: %w", err)
	}
	if err := sameKeys(input.Bytes(), buf.Bytes()); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

// sameKeys reports a key of the input that the re-encoded document lacks
// although its value was not empty. encoding/json matches field names without
// regard to case, so DisallowUnknownFields alone would accept "NodeName" for
// "nodeName"; a consumer written in another language would not.
func sameKeys(in, out []byte) error {
	var a, b any
	if err := json.Unmarshal(in, &a); err != nil {
		return fmt.Errorf("re-read input: %w", err)
	}
	if err := json.Unmarshal(out, &b); err != nil {
		return fmt.Errorf("re-read output: %w", err)
	}
	return compareKeys("$", a, b)
}

func compareKeys(path string, a, b any) error {
	switch av := a.(type) {
	case map[string]any:
		bv, _ := b.(map[string]any)
		for k, v := range av {
			w, ok := bv[k]
			if !ok {
				if isEmpty(v) {
					continue // dropped by omitempty
				}
				return fmt.Errorf("field %s.%s: not spelled as upstream spells it (lost on re-encoding)", path, k)
			}
			if err := compareKeys(path+"."+k, v, w); err != nil {
				return err
			}
		}
	case []any:
		bv, _ := b.([]any)
		for i, v := range av {
			if i >= len(bv) {
				return fmt.Errorf("%s: %d items in, %d out", path, len(av), len(bv))
			}
			if err := compareKeys(fmt.Sprintf("%s[%d]", path, i), v, bv[i]); err != nil {
				return err
			}
		}
	}
	return nil
}

func isEmpty(v any) bool {
	switch x := v.(type) {
	case nil:
		return true
	case bool:
		return !x
	case float64:
		return x == 0
	case string:
		return x == ""
	case []any:
		return len(x) == 0
	case map[string]any:
		return len(x) == 0
	}
	return false
}
