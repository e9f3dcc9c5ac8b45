/**
 * The parameters of an argon2 PHC string (`$argon2id$v=19$m=..,t=..,p=..$salt$hash`), checked
 * against the caps before the argon2 library is asked to verify it.
 */
import { HASH_LIMITS } from './limits.js';

export interface Argon2Params {
  readonly variant: 'argon2id' | 'argon2i' | 'argon2d';
  readonly version: number;
  readonly m: number;
  readonly t: number;
  readonly p: number;
}

const PHC_ARGON2 = /^\$(argon2(?:id|i|d))\$v=(\d+)\$([a-z]=\d{1,10}(?:,[a-z]=\d{1,10})*)\$([A-Za-z0-9+/]+)\$([A-Za-z0-9+/]+)$/;

export function isArgon2String(stored: string): boolean {
  return /^\$argon2(id|i|d)\$/.test(stored);
}

export function parseArgon2Params(stored: string): Argon2Params | string {
  const match = PHC_ARGON2.exec(stored);
  if (match === null) return 'malformed argon2 string';
  const params = new Map((match[3] ?? '').split(',').map((kv) => [kv.slice(0, 1), Number(kv.slice(2))] as const));
  const m = params.get('m');
  const t = params.get('t');
  const p = params.get('p');
  if (m === undefined || t === undefined || p === undefined || params.size !== 3) return 'argon2 needs exactly m, t and p';
  if (m > HASH_LIMITS.maxArgon2MemoryKiB) return `argon2 memory is over the limit of ${HASH_LIMITS.maxArgon2MemoryKiB} KiB`;
  if (t > HASH_LIMITS.maxArgon2TimeCost) return `argon2 time cost is over the limit of ${HASH_LIMITS.maxArgon2TimeCost}`;
  if (p > HASH_LIMITS.maxArgon2Parallelism) return `argon2 parallelism is over the limit of ${HASH_LIMITS.maxArgon2Parallelism}`;
  if (m < 1 || t < 1 || p < 1) return 'argon2 parameters must be positive';
  return { variant: match[1] as Argon2Params['variant'], version: Number(match[2]), m, t, p };
}
