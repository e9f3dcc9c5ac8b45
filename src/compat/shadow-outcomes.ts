/**
 * What a shadowed or fronted request ended as: the metrics' label values. Apart from shadow.ts
 * so that the metrics (and `serve` without shadow or front mode) do not load shadow mode's
 * client and comparison (undici, diff: a third of a start's CPU, 2026-11-26).
 */
export type ShadowOutcome = 'same' | 'different' | 'error' | 'dropped';
export const SHADOW_OUTCOMES: readonly ShadowOutcome[] = ['same', 'different', 'error', 'dropped'];
export type FrontOutcome = 'forwarded' | 'unavailable';
