package shell

// assocOrder returns the keys of an associative array, given in insertion
// order, in the order bash lists them. bash keeps them in a hash table
// (FNV-1 hash, 1024 buckets to start, new items at the head of their
// bucket, four times the buckets once there are twice as many items as
// buckets) and walks it bucket by bucket. Replaying the insertions gives
// the same walk; only the timing of a growth can differ when keys were
// deleted, which is rare.
func assocOrder(keys []string) []string {
	if len(keys) < 2 {
		return keys
	}
	type item struct {
		key  string
		hash uint32
	}
	// Each bucket is stored tail first: appending is inserting at the head.
	nb := uint32(1024)
	buckets := make([][]item, nb)
	for n, k := range keys {
		if uint32(n) >= nb*2 {
			grown := make([][]item, nb*4)
			for _, b := range buckets {
				for i := len(b) - 1; i >= 0; i-- {
					j := b[i].hash & (nb*4 - 1)
					grown[j] = append(grown[j], b[i])
				}
			}
			buckets, nb = grown, nb*4
		}
		h := fnv1(k)
		buckets[h&(nb-1)] = append(buckets[h&(nb-1)], item{k, h})
	}
	out := make([]string, 0, len(keys))
	for _, b := range buckets {
		for i := len(b) - 1; i >= 0; i-- {
			out = append(out, b[i].key)
		}
	}
	return out
}

// fnv1 is bash's hash_string: 32-bit FNV-1.
func fnv1(s string) uint32 {
	h := uint32(2166136261)
	for i := 0; i < len(s); i++ {
		h *= 16777619
		h ^= uint32(s[i])
	}
	return h
}
