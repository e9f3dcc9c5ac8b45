/**
 * OperationName is read from the OPERATIONS list, so a new operation cannot go without a handler.
 * The type assertions are checked by `tsc -p tsconfig.json` (which includes test/): an unused
 * `@ts-expect-error` or a failing expectTypeOf is a compile error there. At run time vitest only
 * checks the list itself.
 */
import { describe, expect, expectTypeOf, it } from 'vitest';
import { OPERATIONS, type OperationName, type OperationSpec } from '../../src/contract/operations.js';
import type { OperationHandler } from '../../src/http/operation-handlers.js';

const handler: OperationHandler = async () => false;

describe('OperationName', () => {
  it('is the union of the names in OPERATIONS, not a list kept by hand beside it', () => {
    expectTypeOf<(typeof OPERATIONS)[number]['name']>().toEqualTypeOf<OperationName>();
    expectTypeOf<OperationName>().toEqualTypeOf<'ValidateUser' | 'ValidateUserToken' | 'WhatsNew' | 'ValidateUserJSON' | 'ValidateUserTokenJSON' | 'GetUserLoginURL'>();
    // Not widened to string: a Record over it demands every name.
    expectTypeOf<string>().not.toEqualTypeOf<OperationName>();
    expect(OPERATIONS.map((op) => op.name)).toEqual(['ValidateUser', 'ValidateUserToken', 'WhatsNew', 'ValidateUserJSON', 'ValidateUserTokenJSON', 'GetUserLoginURL']);
  });

  it('makes a handler table missing one operation a compile error', () => {
    const complete = {
      ValidateUser: handler,
      ValidateUserToken: handler,
      WhatsNew: handler,
      ValidateUserJSON: handler,
      ValidateUserTokenJSON: handler,
      GetUserLoginURL: handler,
    } satisfies Record<OperationName, OperationHandler>;
    const missingOne = {
      ValidateUser: handler,
      ValidateUserToken: handler,
      WhatsNew: handler,
      ValidateUserJSON: handler,
      ValidateUserTokenJSON: handler,
      // @ts-expect-error GetUserLoginURL has no handler
    } satisfies Record<OperationName, OperationHandler>;
    expect(Object.keys(complete)).toHaveLength(OPERATIONS.length);
    expect(Object.keys(missingOne)).toHaveLength(OPERATIONS.length - 1);
  });

  it('is not satisfied by a spec whose name is any string', () => {
    const stray: OperationSpec = { name: 'Seventh', description: '', params: [], result: 'string' };
    // @ts-expect-error 'Seventh' is not one of the contract's operations
    const asContract: OperationSpec<OperationName> = stray;
    expect(asContract.name).toBe('Seventh');
  });
});
