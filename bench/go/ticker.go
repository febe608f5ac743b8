// The Go loop of "soft realtime ticker on Linux", measured the way downbeat-bench measures every method: a time.Ticker at
// -period, optional burner goroutines that sleep 1 ms in a loop, the GC off. Each tick's
// lateness is the time since the latest deadline start + k*period that has passed (the ticker
// drops ticks it cannot deliver, so this never exceeds one period). Prints one JSON object.
package main

import (
	"encoding/json"
	"flag"
	"os"
	"runtime/debug"
	"sort"
	"syscall"
	"time"
)

func burn() {
	for {
		time.Sleep(time.Millisecond)
	}
}

func main() {
	period := flag.Duration("period", 16*time.Millisecond, "tick period")
	seconds := flag.Float64("seconds", 5, "how long to run")
	load := flag.Int("load", 0, "burner goroutines")
	flag.Parse()
	debug.SetGCPercent(-1)
	for i := 0; i < *load; i++ {
		go burn()
	}
	var before syscall.Rusage
	syscall.Getrusage(syscall.RUSAGE_SELF, &before)
	n := int(float64(time.Second) * *seconds / float64(*period))
	lateness := make([]int64, 0, n)
	start := time.Now()
	ticker := time.NewTicker(*period)
	for len(lateness) < n {
		<-ticker.C
		since := time.Since(start)
		k := since / *period
		lateness = append(lateness, int64(since-k**period))
	}
	wall := time.Since(start)
	var after syscall.Rusage
	syscall.Getrusage(syscall.RUSAGE_SELF, &after)
	cpu := time.Duration(syscall.TimevalToNsec(after.Utime) + syscall.TimevalToNsec(after.Stime) -
		syscall.TimevalToNsec(before.Utime) - syscall.TimevalToNsec(before.Stime))
	sort.Slice(lateness, func(i, j int) bool { return lateness[i] < lateness[j] })
	q := func(p float64) int64 {
		r := int(p*float64(len(lateness)) + 0.999999)
		if r < 1 {
			r = 1
		}
		return lateness[r-1]
	}
	json.NewEncoder(os.Stdout).Encode(map[string]float64{
		"ticks":       float64(len(lateness)),
		"p50_us":      float64(q(0.5)) / 1e3,
		"p99_us":      float64(q(0.99)) / 1e3,
		"p999_us":     float64(q(0.999)) / 1e3,
		"max_us":      float64(lateness[len(lateness)-1]) / 1e3,
		"cpu_percent": cpu.Seconds() / wall.Seconds() * 100,
	})
}
