package readmodel

import "strings"

// Identities: the address and id rules every package checks the same way.

// IsEVMAddress reports whether s is 0x plus 40 hex digits, in any case.
func IsEVMAddress(s string) bool {
	if len(s) != 42 || (s[:2] != "0x" && s[:2] != "0X") {
		return false
	}
	for i := 2; i < len(s); i++ {
		switch c := s[i]; {
		case c >= '0' && c <= '9', c >= 'a' && c <= 'f', c >= 'A' && c <= 'F':
		default:
			return false
		}
	}
	return true
}

// IsBase58 reports whether s is a Solana base58 address: 32 to 44
// characters of the Bitcoin base58 alphabet (no 0, O, I, l). Case is
// significant.
func IsBase58(s string) bool {
	if len(s) < 32 || len(s) > 44 {
		return false
	}
	for i := 0; i < len(s); i++ {
		switch ch := s[i]; {
		case '1' <= ch && ch <= '9':
		case 'A' <= ch && ch <= 'Z' && ch != 'I' && ch != 'O':
		case 'a' <= ch && ch <= 'z' && ch != 'l':
		default:
			return false
		}
	}
	return true
}

// CollectionIDFor is the canonical collection document id of a contract on
// a chain: "<chain>_<contract>", lowercased on every chain.
func CollectionIDFor(c Chain, contract string) string {
	return strings.ToLower(string(c) + "_" + contract)
}
