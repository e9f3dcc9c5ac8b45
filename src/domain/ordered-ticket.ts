/**
 * A login ticket that carries its issue time, sealed, so that the store can keep tickets in issue
 * order (the tickets table, migration 17) and still find one from its text alone.
 *
 * A ticket's first 128 bits are one AES-128 block under the installation's ticket key
 * (Store.installationSecret TICKET_KEY_SECRET, made by migration 17; the AES key is the first
 * 128 bits of its SHA-256): the issue time in milliseconds since the epoch
 * (48 bits, big-endian) followed by 80 bits from the CSPRNG. A longer form (hex digits past 32)
 * carries more CSPRNG bytes after that block, in clear. The text is the compatibility profile's
 * token form, as every token we write, and only its SHA-256 is stored.
 *
 * Why sealed: a ticket is a credential, and security.md promises every token and ticket 128 bits
 * nobody can guess. Without the key the block is indistinguishable from 128 random bits (AES is a
 * pseudo-random permutation, and no two blocks are ever the same: the time and the random bits
 * differ), so guessing a live ticket succeeds with (live tickets) / 2^128 per try, as for a
 * random one; the time in clear would have let a guesser aim at the last two minutes and left 80
 * bits to find. With the key (a copy of the database), a ticket still takes 2^80 tries per issue
 * millisecond to find by its hash.
 *
 * Why at all: a ticket keyed by its hash lands on a random page of its table, one more page to
 * write, sync and checkpoint per ticket; keyed by (issue time, hash), the tickets of one commit
 * are appended together (docs/fast-paths.md "Login tickets in issue order"; off:
 * performance.orderedTickets false issues random tickets kept in the tokens table again).
 */
import { createCipheriv, createDecipheriv, createHash, randomBytes } from 'node:crypto';
import type { TokenForm } from '../contract/compat-profile.js';
import type { RandomSource } from './random-source.js';
import { formatToken, tokenFormBytes } from './token-form.js';

/**
 * Store.installationSecret name of the ticket key: text of at least 128 random bits (migration
 * 17 writes 64 hex digits).
 */
export const TICKET_KEY_SECRET = 'ticket-key';
/** The shortest ticket key taken: 32 characters, 128 bits in hex. */
const MIN_KEY_LENGTH = 32;

/** A new ticket key (256 bits, hex), for a service that is not given the installation's. */
export function newTicketKey(): string {
  return randomBytes(32).toString('hex');
}

/** The issue time's bytes at the start of the sealed block. */
const TIME_BYTES = 6;
const BLOCK_BYTES = 16;
/** 2^48: the issue times a ticket can carry (until the year 10889). */
const TIME_LIMIT = 2 ** 48;

/**
 * How far from now an issue time read off a text may be for the text to be looked up as an
 * ordered ticket: back by the longest ticket lifetime the configuration allows (86,400 s,
 * config tickets.ttlSeconds) and, both ways, an hour for clocks that differ between the
 * instances of a fleet. Any other text opens to a time in this window once in about three
 * million: one more primary-key lookup that finds nothing.
 */
export const ORDERED_TICKET_WINDOW = Object.freeze({ pastMs: 86_400_000 + 3_600_000, futureMs: 3_600_000 });

/** One AES-128 block sealed or opened under the ticket key (ECB of a single block: a keyed permutation). */
export interface TicketSeal {
  seal(block: Uint8Array): Buffer;
  open(block: Uint8Array): Buffer;
}

/** The seal of a ticket key (TICKET_KEY_SECRET): AES-128 under the first 128 bits of its SHA-256. */
export function ticketSeal(secret: string): TicketSeal {
  if (secret.length < MIN_KEY_LENGTH) throw new Error(`the ticket key must be at least ${MIN_KEY_LENGTH} characters`);
  const key = createHash('sha256').update(secret, 'utf8').digest().subarray(0, BLOCK_BYTES);
  // One cipher object each, reused: single blocks without padding are returned by update() at
  // once, and ECB carries nothing from one block to the next.
  const cipher = createCipheriv('aes-128-ecb', key, null).setAutoPadding(false);
  const decipher = createDecipheriv('aes-128-ecb', key, null).setAutoPadding(false);
  return {
    seal: (block) => cipher.update(block),
    open: (block) => decipher.update(block),
  };
}

/** A new ticket's text in the form, issued at `issuedAtMs` (whole milliseconds since the epoch). */
export function orderedTicketText(random: RandomSource, form: TokenForm, issuedAtMs: number, seal: TicketSeal): string {
  if (!Number.isSafeInteger(issuedAtMs) || issuedAtMs < 0 || issuedAtMs >= TIME_LIMIT) throw new Error('a ticket\'s issue time must be a whole millisecond from 1970 on');
  const length = tokenFormBytes(form);
  const bytes = random.bytes(length);
  if (bytes.length !== length || length < BLOCK_BYTES) throw new Error(`random source returned ${bytes.length} bytes, expected ${length} (at least ${BLOCK_BYTES})`);
  const block = Buffer.from(bytes.subarray(0, BLOCK_BYTES));
  block.writeUIntBE(issuedAtMs, 0, TIME_BYTES);
  const sealed = seal.seal(block);
  block.fill(0);
  bytes.set(sealed);
  return formatToken(bytes, form);
}

/**
 * The issue time an ordered ticket's canonical text (tokens.ts canonicalToken: lower-case hex,
 * a GUID in D form) carries, when it opens to a time within ORDERED_TICKET_WINDOW of `nowMs`;
 * null otherwise (a session token, a ticket of the tokens table, anything else).
 */
export function orderedTicketIssuedAt(canonical: string, nowMs: number, seal: TicketSeal): number | null {
  // A GUID's 32 digits are split by dashes (8-4-4-4-12); a hex form's first 32 are the block.
  const digits = canonical.charCodeAt(8) === 0x2d ? canonical.replaceAll('-', '') : canonical.slice(0, 2 * BLOCK_BYTES);
  if (digits.length !== 2 * BLOCK_BYTES) return null;
  const block = Buffer.from(digits, 'hex');
  if (block.length !== BLOCK_BYTES) return null;
  const issuedAt = seal.open(block).readUIntBE(0, TIME_BYTES);
  return issuedAt >= nowMs - ORDERED_TICKET_WINDOW.pastMs && issuedAt <= nowMs + ORDERED_TICKET_WINDOW.futureMs ? issuedAt : null;
}
