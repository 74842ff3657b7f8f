// Package rung holds the domain types of rung, a self-hosted runtime that
// gives AI agents a computer: sandboxes, execs, snapshots, sizes, policy,
// typed IDs and the error classes with their wire codes.
//
// It imports only the standard library. Every other package of rung
// imports it; it imports none of them.
package rung
