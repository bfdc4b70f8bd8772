// A reference for tests/fuzz/probe_client_test.ts: what upstream's kubelet decides
// about one httpGet probe (pkg/probe/http: DoHTTPProbe with its transport and
// redirect rules) or one httpGet lifecycle hook (pkg/kubelet/lifecycle: any
// response is success), made with Go's own net/http client. Written for the test
// from those rules, using only the standard library.
//
// Reads one JSON request a line on stdin ({"id", "url", "mode", "timeoutMs"}) and
// answers each on stdout ({"id", "result", "output"}), concurrently.
package main

import (
	"bufio"
	"crypto/tls"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
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

// The probe's redirect rule: another host ends the chain with its last response.
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
	if r.Mode == "hook" {
		client := &http.Client{Timeout: timeout, Transport: transport}
		res, err := client.Do(req)
		if err != nil {
			return answer{r.ID, "failure", err.Error()}
		}
		if res.ContentLength <= maxRespBodyLength {
			io.Copy(io.Discard, &io.LimitedReader{R: res.Body, N: maxRespBodyLength})
		}
		res.Body.Close()
		return answer{r.ID, "success", ""}
	}
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
			a := probe(r)
			mu.Lock()
			defer mu.Unlock()
			out.Encode(a)
		}()
	}
}
