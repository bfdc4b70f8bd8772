// A reference for tests/fuzz/probe_client_test.ts: what upstream's kubelet decides
// about one httpGet probe (pkg/probe/http: DoHTTPProbe with its transport and
// redirect rules) or one httpGet lifecycle hook (pkg/kubelet/lifecycle
// runHTTPHandler with kubelet.go's hook client: any response is success, an HTTPS
// request answered in plain HTTP is sent again over HTTP), made with Go's own
// net/http client. Written for the test from those rules (v1.37.2), using only the
// standard library.
//
// Reads one JSON request a line on stdin ({"id", "url", "mode", "timeoutMs"}) and
// answers each on stdout ({"id", "result", "output"}), concurrently.
package main

import (
	"bufio"
	"context"
	"crypto/tls"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"strings"
	"sync"
	"time"
)

const maxRespBodyLength = 10 * 1 << 10

type request struct {
	ID        int    `json:"id"`
	URL       string `json:"url"`
	Mode      string `json:"mode"`
	TimeoutMs int    `json:"timeoutMs"`
}

type answer struct {
	ID     int    `json:"id"`
	Result string `json:"result"`
	Output string `json:"output"`
}

var transport = &http.Transport{
	TLSClientConfig:    &tls.Config{InsecureSkipVerify: true},
	DisableKeepAlives:  true,
	Proxy:              http.ProxyURL(nil),
	DisableCompression: true,
}

// The hook client of kubelet.go: TLS without verification, compression on (Go asks
// for gzip), no proxy. Upstream keeps connections alive between hooks; here each
// case gets fresh ones (the cases test how answers are read, not connection reuse).
var hookTransport = &http.Transport{
	TLSClientConfig:   &tls.Config{InsecureSkipVerify: true},
	DisableKeepAlives: true,
}

// The probe's and the hook's redirect rule (httpprobe.RedirectChecker(false)):
// another host ends the chain with its last response.
func checkRedirect(req *http.Request, via []*http.Request) error {
	if req.URL.Hostname() != via[0].URL.Hostname() {
		return http.ErrUseLastResponse
	}
	if len(via) >= 10 {
		return errors.New("stopped after 10 redirects")
	}
	return nil
}

func probe(r request) answer {
	timeout := time.Duration(r.TimeoutMs) * time.Millisecond
	req, err := http.NewRequest("GET", r.URL, nil)
	if err != nil {
		return answer{r.ID, "failure", err.Error()}
	}
	req.Header.Set("User-Agent", "kube-probe/1.37")
	req.Header.Set("Accept", "*/*")
	client := &http.Client{Timeout: timeout, Transport: transport, CheckRedirect: checkRedirect}
	res, err := client.Do(req)
	if err != nil {
		return answer{r.ID, "failure", err.Error()}
	}
	defer res.Body.Close()
	b, err := io.ReadAll(&io.LimitedReader{R: res.Body, N: maxRespBodyLength})
	if err != nil {
		return answer{r.ID, "failure", err.Error()}
	}
	if res.StatusCode >= 200 && res.StatusCode < 300 {
		return answer{r.ID, "success", string(b)}
	}
	if res.StatusCode >= 300 && res.StatusCode < 400 {
		return answer{r.ID, "success", fmt.Sprintf("Probe terminated redirects, Response body: %v", string(b))}
	}
	return answer{r.ID, "failure", fmt.Sprintf("HTTP probe failed with statuscode: %d", res.StatusCode)}
}

// hook is runHTTPHandler: upstream's hook has no deadline of its own; the test's
// timeout bounds the whole of it, the retry over HTTP included, as ours.
func hook(r request) answer {
	ctx, cancel := context.WithTimeout(context.Background(), time.Duration(r.TimeoutMs)*time.Millisecond)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, "GET", r.URL, nil)
	if err != nil {
		return answer{r.ID, "failure", err.Error()}
	}
	req.Header.Set("User-Agent", "kube-lifecycle/1.37")
	req.Header.Set("Accept", "*/*")
	client := &http.Client{Transport: hookTransport, CheckRedirect: checkRedirect}
	res, err := client.Do(req)
	discardHTTPRespBody(res)
	if isHTTPResponseError(err) {
		req := req.Clone(ctx)
		req.URL.Scheme = "http"
		req.Header.Del("Authorization")
		res, httpErr := client.Do(req)
		discardHTTPRespBody(res)
		if httpErr == nil {
			return answer{r.ID, "success", "fallback"}
		}
	}
	if err != nil {
		return answer{r.ID, "failure", err.Error()}
	}
	return answer{r.ID, "success", ""}
}

func discardHTTPRespBody(res *http.Response) {
	if res == nil {
		return
	}
	defer res.Body.Close()
	if res.ContentLength <= maxRespBodyLength {
		io.Copy(io.Discard, &io.LimitedReader{R: res.Body, N: maxRespBodyLength})
	}
}

func isHTTPResponseError(err error) bool {
	if err == nil {
		return false
	}
	urlErr := &url.Error{}
	if !errors.As(err, &urlErr) {
		return false
	}
	return strings.Contains(urlErr.Err.Error(), "server gave HTTP response to HTTPS client")
}

func main() {
	in := bufio.NewScanner(os.Stdin)
	in.Buffer(make([]byte, 1<<20), 1<<20)
	var mu sync.Mutex
	out := json.NewEncoder(os.Stdout)
	for in.Scan() {
		var r request
		if err := json.Unmarshal(in.Bytes(), &r); err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(2)
		}
		go func() {
			var a answer
			if r.Mode == "hook" {
				a = hook(r)
			} else {
				a = probe(r)
			}
			mu.Lock()
			defer mu.Unlock()
			out.Encode(a)
		}()
	}
}
