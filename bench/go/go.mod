module downbeat.invalid/bench/go

go 1.21
