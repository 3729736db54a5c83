// Command loadgen sends load to a tritonserver's HTTP endpoint for bench/latency_profile.py
// and bench/simulator_fidelity.py.
//
//	loadgen -url http://127.0.0.1:8000 -model classifier -input input_tensor -width 128 < arrivals.txt
//	loadgen -url ... -clients 8 -seconds 3
//
// Open loop (the default): standard input holds one arrival time per line (seconds
// from the start, ascending); one request is sent at each without waiting for
// earlier ones, as a Poisson arrival process is. Closed loop (-clients N): N
// clients each send their next request when the last one returns, for -seconds.
//
// Requests use the KServe v2 binary tensor extension, so neither side parses JSON
// floats. Each request prints "ok <sent> <latency>" or "rejected <sent> <latency>"
// (seconds), then "lag_p95 <seconds>": how late the open-loop sends were. It is
// compiled, so it leaves the server the CPU: the Python client took most of a core
// at 2,500 req/s on a 2-core machine.
package main

import (
	"bufio"
	"bytes"
	"encoding/binary"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"math"
	"net/http"
	"os"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"
)

type result struct {
	arrival, latency float64
	ok               bool
}

func main() {
	url := flag.String("url", "", "server base URL, e.g. http://127.0.0.1:8000")
	model := flag.String("model", "", "model name")
	input := flag.String("input", "", "input tensor name")
	width := flag.Int("width", 0, "FP32 values per request (one item)")
	clients := flag.Int("clients", 0, "closed loop: this many clients (0: open loop from standard input)")
	seconds := flag.Float64("seconds", 0, "closed loop: for this long")
	flag.Parse()
	if *url == "" || *model == "" || *input == "" || *width <= 0 || (*clients > 0) != (*seconds > 0) {
		fmt.Fprintln(os.Stderr, "loadgen: -url, -model, -input and -width are required; -clients and -seconds go together")
		os.Exit(2)
	}
	body, headerLength := request(*input, *width)
	endpoint := fmt.Sprintf("%s/v2/models/%s/infer", *url, *model)
	client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 1024}, Timeout: 30 * time.Second}
	fire := func() (bool, float64) {
		start := time.Now()
		ok := send(client, endpoint, body, headerLength)
		return ok, time.Since(start).Seconds()
	}
	out := bufio.NewWriter(os.Stdout)
	defer out.Flush()
	if *clients > 0 {
		closedLoop(out, fire, *clients, *seconds)
		return
	}
	arrivals, err := readArrivals(os.Stdin)
	if err != nil {
		fmt.Fprintln(os.Stderr, "loadgen:", err)
		os.Exit(2)
	}
	openLoop(out, fire, arrivals)
}

func report(out io.Writer, r result) {
	status := "ok"
	if !r.ok {
		status = "rejected"
	}
	fmt.Fprintf(out, "%s %.6f %.6f\n", status, r.arrival, r.latency)
}

func closedLoop(out io.Writer, fire func() (bool, float64), clients int, seconds float64) {
	var mu sync.Mutex
	var wg sync.WaitGroup
	origin := time.Now()
	for c := 0; c < clients; c++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for time.Since(origin).Seconds() < seconds {
				sent := time.Since(origin).Seconds()
				ok, latency := fire()
				mu.Lock()
				report(out, result{sent, latency, ok})
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	fmt.Fprintln(out, "lag_p95 0")
}

func openLoop(out io.Writer, fire func() (bool, float64), arrivals []float64) {
	results := make([]result, len(arrivals))
	lags := make([]float64, len(arrivals))
	var wg sync.WaitGroup
	origin := time.Now()
	for i, at := range arrivals {
		if wait := time.Duration(at*float64(time.Second)) - time.Since(origin); wait > 0 {
			time.Sleep(wait)
		}
		lags[i] = time.Since(origin).Seconds() - at
		wg.Add(1)
		go func(i int, at float64) {
			defer wg.Done()
			ok, latency := fire()
			results[i] = result{at, latency, ok}
		}(i, at)
	}
	wg.Wait()
	for _, r := range results {
		report(out, r)
	}
	sort.Float64s(lags)
	fmt.Fprintf(out, "lag_p95 %.6f\n", lags[int(math.Ceil(0.95*float64(len(lags))))-1])
}

func readArrivals(r io.Reader) ([]float64, error) {
	var arrivals []float64
	scanner := bufio.NewScanner(r)
	for scanner.Scan() {
		line := strings.TrimSpace(scanner.Text())
		if line == "" {
			continue
		}
		at, err := strconv.ParseFloat(line, 64)
		if err != nil {
			return nil, fmt.Errorf("arrival %q: %w", line, err)
		}
		arrivals = append(arrivals, at)
	}
	if len(arrivals) == 0 {
		return nil, fmt.Errorf("no arrival times on standard input")
	}
	return arrivals, scanner.Err()
}

// request is the body of one inference: the JSON header, then the raw FP32 input of one item.
func request(input string, width int) ([]byte, int) {
	header, _ := json.Marshal(map[string]any{
		"inputs": []map[string]any{{
			"name": input, "shape": []int{1, width}, "datatype": "FP32",
			"parameters": map[string]any{"binary_data_size": 4 * width},
		}},
	})
	var body bytes.Buffer
	body.Write(header)
	for i := 0; i < width; i++ {
		_ = binary.Write(&body, binary.LittleEndian, float32(1))
	}
	return body.Bytes(), len(header)
}

func send(client *http.Client, endpoint string, body []byte, headerLength int) bool {
	req, err := http.NewRequest(http.MethodPost, endpoint, bytes.NewReader(body))
	if err != nil {
		return false
	}
	req.Header.Set("Content-Type", "application/octet-stream")
	req.Header.Set("Inference-Header-Content-Length", strconv.Itoa(headerLength))
	resp, err := client.Do(req)
	if err != nil {
		return false
	}
	defer resp.Body.Close()
	_, _ = io.Copy(io.Discard, resp.Body)
	return resp.StatusCode == http.StatusOK
}
