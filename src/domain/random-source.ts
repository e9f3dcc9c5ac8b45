import { randomBytes } from 'node:crypto';

/** Where secrets come from; injected so tests can produce known tokens. Production uses the OS CSPRNG. */
export interface RandomSource {
  bytes(length: number): Uint8Array;
}

export const cryptoRandomSource: RandomSource = Object.freeze({
  bytes: (length: number): Uint8Array => randomBytes(length),
});
