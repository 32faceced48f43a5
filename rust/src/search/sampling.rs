//! Deterministic bottom-k sampling: each (token, sentence) pair gets a pseudo-random priority and each
//! token keeps the k sentences with the smallest priorities. The result is a uniform sample without
//! replacement that does not depend on the order in which sentences are seen (so neither on threads).

use std::cmp::Ordering;
use std::collections::BinaryHeap;

/// SplitMix64 finaliser; all arithmetic wraps mod 2^64.
#[inline]
pub fn splitmix64(x: u64) -> u64 {
    let mut z = x.wrapping_add(0x9E37_79B9_7F4A_7C15);
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}

/// priority(t, s) = splitmix64(splitmix64(seed + t) ^ s).
#[inline]
pub fn priority(seed: u64, token_id: u32, sentence_index: u64) -> u64 {
    splitmix64(splitmix64(seed.wrapping_add(token_id as u64)) ^ sentence_index)
}

struct Entry<T> {
    priority: u64,
    index: u64,
    item: T,
}

impl<T> PartialEq for Entry<T> {
    fn eq(&self, other: &Self) -> bool {
        (self.priority, self.index) == (other.priority, other.index)
    }
}
impl<T> Eq for Entry<T> {}
impl<T> PartialOrd for Entry<T> {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}
impl<T> Ord for Entry<T> {
    fn cmp(&self, other: &Self) -> Ordering {
        (self.priority, self.index).cmp(&(other.priority, other.index))
    }
}

/// The k items with the smallest (priority, index), in a bounded max-heap.
pub struct BottomK<T> {
    k: usize,
    heap: BinaryHeap<Entry<T>>,
}

impl<T> BottomK<T> {
    pub fn new(k: usize) -> Self {
        BottomK { k, heap: BinaryHeap::with_capacity(k.min(1024)) }
    }

    /// Whether (priority, index) would enter the sample now.
    #[inline]
    pub fn would_accept(&self, priority: u64, index: u64) -> bool {
        if self.heap.len() < self.k {
            return true;
        }
        match self.heap.peek() {
            Some(worst) => (priority, index) < (worst.priority, worst.index),
            None => false, // k == 0
        }
    }

    /// The largest priority kept, once full: anything with a larger or equal priority and a later
    /// index can never enter. `None` while the sample is not full.
    pub fn threshold(&self) -> Option<u64> {
        if self.heap.len() < self.k {
            None
        } else {
            Some(self.heap.peek().map(|worst| worst.priority).unwrap_or(0))
        }
    }

    pub fn offer(&mut self, priority: u64, index: u64, item: T) {
        if !self.would_accept(priority, index) {
            return;
        }
        if self.heap.len() == self.k {
            self.heap.pop();
        }
        self.heap.push(Entry { priority, index, item });
    }

    pub fn len(&self) -> usize {
        self.heap.len()
    }

    pub fn is_empty(&self) -> bool {
        self.heap.is_empty()
    }

    /// Items sorted by index.
    pub fn into_sorted_by_index(self) -> Vec<(u64, T)> {
        let mut items: Vec<(u64, T)> = self.heap.into_iter().map(|e| (e.index, e.item)).collect();
        items.sort_by_key(|(index, _)| *index);
        items
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn splitmix64_reference_values() {
        // The first two outputs of the SplitMix64 generator seeded with 0.
        assert_eq!(splitmix64(0), 0xE220_A839_7B1D_CDAF);
        assert_eq!(splitmix64(0x9E37_79B9_7F4A_7C15), 0x6E78_9E6A_A1B9_65F4);
        assert_eq!(priority(u64::MAX, 1, 0), splitmix64(splitmix64(0)));
    }

    #[test]
    fn keeps_the_k_smallest_whatever_the_order() {
        let items: Vec<(u64, u64)> = (0..200u64).map(|i| (priority(3, 9, i), i)).collect();
        let mut expected: Vec<(u64, u64)> = items.clone();
        expected.sort();
        let mut expected_indices: Vec<u64> = expected[..7].iter().map(|(_, i)| *i).collect();
        expected_indices.sort();
        for order in [false, true] {
            let mut sample = BottomK::new(7);
            let mut sequence = items.clone();
            if order {
                sequence.reverse();
            }
            for (p, i) in sequence {
                sample.offer(p, i, i);
            }
            let got: Vec<u64> = sample.into_sorted_by_index().into_iter().map(|(i, _)| i).collect();
            assert_eq!(got, expected_indices);
        }
    }

    #[test]
    fn ties_prefer_the_smaller_index_and_k_zero_keeps_nothing() {
        let mut sample = BottomK::new(2);
        for i in [5u64, 3, 9, 1] {
            sample.offer(42, i, ());
        }
        let kept: Vec<u64> = sample.into_sorted_by_index().into_iter().map(|(i, _)| i).collect();
        assert_eq!(kept, vec![1, 3]);
        let mut empty = BottomK::new(0);
        empty.offer(0, 0, ());
        assert!(empty.is_empty());
        assert_eq!(empty.threshold(), Some(0));
    }

    #[test]
    fn selection_frequencies_are_uniform() {
        // N = 20 sentences, k = 5, 4000 seeds: each sentence is kept ~ k/N = 25 % of the time.
        let (n, k, seeds) = (20u64, 5usize, 4000u64);
        let mut counts = vec![0u32; n as usize];
        for seed in 0..seeds {
            let mut sample = BottomK::new(k);
            for i in 0..n {
                sample.offer(priority(seed, 7, i), i, ());
            }
            for (i, _) in sample.into_sorted_by_index() {
                counts[i as usize] += 1;
            }
        }
        let expected = seeds as f64 * k as f64 / n as f64; // 1000, sd ~ 27
        for c in counts {
            assert!((c as f64 - expected).abs() < 120.0, "{c} vs {expected}");
        }
    }
}
