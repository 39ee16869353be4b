package readmodel

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
)

func TestIsEVMAddress(t *testing.T) {
	tests := []struct {
		name string
		in   string
		want bool
	}{
		{name: "lowercase", in: "0x95dc0e0763d8cf0b8084d07991dcc1176e286a11", want: true},
		{name: "mixed case and 0X", in: "0X95DC0e0763d8cf0b8084d07991dcc1176e286A11", want: true},
		{name: "no prefix", in: "0095dc0e0763d8cf0b8084d07991dcc1176e286a11", want: false},
		{name: "39 digits", in: "0x95dc0e0763d8cf0b8084d07991dcc1176e286a1", want: false},
		{name: "41 digits", in: "0x95dc0e0763d8cf0b8084d07991dcc1176e286a111", want: false},
		{name: "non-hex", in: "0x95dc0e0763d8cf0b8084d07991dcc1176e286a1g", want: false},
		{name: "empty", in: "", want: false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			assert.Equal(t, tc.want, IsEVMAddress(tc.in))
		})
	}
}

func TestIsBase58(t *testing.T) {
	tests := []struct {
		name string
		in   string
		want bool
	}{
		{name: "32 characters", in: strings.Repeat("A", 32), want: true},
		{name: "44 characters", in: "So11111111111111111111111111111111111111112"[:43] + "z", want: true},
		{name: "31 characters", in: strings.Repeat("A", 31), want: false},
		{name: "45 characters", in: strings.Repeat("A", 45), want: false},
		{name: "zero", in: strings.Repeat("A", 31) + "0", want: false},
		{name: "capital O", in: strings.Repeat("A", 31) + "O", want: false},
		{name: "capital I", in: strings.Repeat("A", 31) + "I", want: false},
		{name: "lowercase l", in: strings.Repeat("A", 31) + "l", want: false},
		{name: "0x address", in: "0x95dc0e0763d8cf0b8084d07991dcc1176e286a11", want: false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			assert.Equal(t, tc.want, IsBase58(tc.in))
		})
	}
}
