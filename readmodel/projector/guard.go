package projector

import "github.com/marketd/marketd/readmodel/store"

// guarded runs fn, turning a panic (Badger panics on some damaged files)
// into a store damage error, so a damaged store ends in a rebuild
// (Options.OnDamage), not in a crashed process. Every lock fn takes is
// released by a defer, so recovering leaves the projector usable.
func (p *Projector) guarded(what string, fn func() error) (err error) {
	defer func() {
		if r := recover(); r != nil {
			err = store.Recovered(r, what)
		}
	}()
	return fn()
}

// damaged hands err to Options.OnDamage when it says the store is damaged.
func (p *Projector) damaged(err error) {
	if p.opts.OnDamage == nil {
		return
	}
	if _, ok := store.Damaged(err); ok {
		p.opts.OnDamage(err)
	}
}
