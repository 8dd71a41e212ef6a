//go:build !linux

package bench

func memoryCosts(string) MemoryCosts { return MemoryCosts{} }
