/**
 * Boolean answers compiled at start-up (src/wire/soap-envelope.ts booleanBodies, the contract's
 * httpBooleanBodies): the bytes the server writes are the UTF-8 of the text the encoders give,
 * for both values on every binding, and the same Buffer every time (nothing built per request).
 */
import { describe, expect, it } from 'vitest';
import { compileContract } from '../../src/wire/compiled-contract.js';
import { writeHttpResult, writeHttpResultBody } from '../../src/wire/http-result.js';
import { writeSoapResult, writeSoapResultBody } from '../../src/wire/soap-result.js';

const contract = compileContract({ timeZone: 'UTC' });
const validateUserToken = contract.byName.get('ValidateUserToken');

describe('boolean result bodies', () => {
  it('ValidateUserToken is the boolean operation these answers are compiled for', () => {
    expect(validateUserToken?.spec.result).toBe('boolean');
  });

  for (const version of ['1.1', '1.2'] as const) {
    for (const value of [true, false]) {
      it(`SOAP ${version}, ${value}: the UTF-8 of the envelope, one shared Buffer`, () => {
        const op = validateUserToken!;
        const body = writeSoapResultBody(contract, op, version, value);
        expect(Buffer.isBuffer(body)).toBe(true);
        expect(body.toString()).toBe(writeSoapResult(contract, op, version, value));
        expect(body.toString()).toContain(`<ValidateUserTokenResult>${value}</ValidateUserTokenResult>`);
        expect(writeSoapResultBody(contract, op, version, value)).toBe(body);
      });
    }
  }

  for (const value of [true, false]) {
    it(`HTTP GET / POST, ${value}: the UTF-8 of the document, one shared Buffer`, () => {
      const op = validateUserToken!;
      const body = writeHttpResultBody(contract, op, value);
      expect(Buffer.isBuffer(body)).toBe(true);
      expect(body.toString()).toBe(writeHttpResult(contract, op, value));
      expect(body.toString()).toBe(`<?xml version="1.0" encoding="utf-8"?>\r\n<boolean xmlns="SVCAPI">${value}</boolean>`);
      expect(writeHttpResultBody(contract, op, value)).toBe(body);
    });
  }

  it('only true is true: any other value answers false, as the text encoder does', () => {
    const op = validateUserToken!;
    expect(writeSoapResultBody(contract, op, '1.1', 'true').toString()).toBe(writeSoapResult(contract, op, '1.1', false));
    expect(writeHttpResultBody(contract, op, 'true').toString()).toBe(writeHttpResult(contract, op, false));
  });

  it('the compiled bytes cannot be replaced', () => {
    const frame = validateUserToken!.soap['1.1'];
    expect(Object.isFrozen(frame.booleanBodies)).toBe(true);
    expect(Object.isFrozen(contract.httpBooleanBodies)).toBe(true);
  });
});
