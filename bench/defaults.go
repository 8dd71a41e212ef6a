package bench

// Default sets *v to d when it is zero or negative: how every benchmark's
// configuration fills a number that was left unset.
func Default[T ~int | ~int16 | ~int32 | ~int64 | ~float64](v *T, d T) {
	if *v <= 0 {
		*v = d
	}
}
