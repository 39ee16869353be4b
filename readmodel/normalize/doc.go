// Package normalize turns upstream rows (the Raw* wire shapes) into the
// normalized rows of package readmodel, rejecting upstream garbage with a
// *RejectError. It imports the standard library and readmodel only.
package normalize
