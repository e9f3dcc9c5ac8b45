/**
 * Token adoption end to end on PostgreSQL (the system suite: npm run test:system): the scenarios
 * of token-adoption.test.ts (token-adoption-world.ts), each on a fresh schema. Adoption stores
 * through the store's importToken, so the row, its one-per-hash rule, revocation, expiry, the
 * audit events and what the database holds of a token are the PostgreSQL adapter's here.
 */
import { afterAll, afterEach, beforeAll, describe, it } from 'vitest';
import { dropSchemas, newSchemaName, postgresForTests, schemaUrl } from '../support/postgres.js';
import {
  adoptedTokenIsOurs, adoptionsAudited, concurrentChecksAdoptOnce, expiryCappedStoredOnce, hostileAnswersAdoptNothing, startAdoptionWorld, type AdoptionWorld,
} from './token-adoption-world.js';

const pgAdmin = await postgresForTests();
const schemas: string[] = [];
let world: AdoptionWorld | undefined;
beforeAll(async () => {
  if (pgAdmin === null) return;
  world = await startAdoptionWorld(() => {
    const schema = newSchemaName();
    schemas.push(schema);
    return schemaUrl(schema);
  });
});
afterEach(async () => {
  await world?.reset();
});
afterAll(async () => {
  await world?.close();
  if (pgAdmin !== null) await dropSchemas(schemas);
});

const inWorld = (scenario: (w: AdoptionWorld) => Promise<void>) => async (): Promise<void> => {
  if (world === undefined) throw new Error('no adoption world');
  await scenario(world);
};

describe.skipIf(pgAdmin === null)('token adoption on PostgreSQL', () => {
  it('stores a vouched token as its SHA-256 only, with its owner and legacy expiry; then it is ours: valid with the old service down, revocable, expiring', inWorld(adoptedTokenIsOurs));
  it('caps the expiry at the application\'s token lifetime, and the same token is stored once', inWorld(expiryCappedStoredOnce));
  it('many concurrent checks of one token make one ValidateUserTokenJSON call and one adoption', inWorld(concurrentChecksAdoptOnce));
  it('a hostile old service adopts nothing: every kind of bad answer, nothing stored, passthrough as before', inWorld(hostileAnswersAdoptNothing));
  it('records each adoption, and the refusals that matter for security, in the audit trail: fields, never the token', inWorld(adoptionsAudited));
});
