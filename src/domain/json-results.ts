/**
 * The result strings of ValidateUserJSON and ValidateUserTokenJSON (product decision, issue 3;
 * the reference's own JSON texts are sample data). Failure is one fixed text for every reason.
 */
import type { TokenCheck, ValidateUserOutcome } from './auth-service.js';

export const VALIDATE_USER_JSON_FAILURE = '{"success":false,"token":""}';
export const VALIDATE_TOKEN_JSON_INVALID = '{"valid":false}';

export function validateUserJson(outcome: ValidateUserOutcome): string {
  if (!outcome.ok) return VALIDATE_USER_JSON_FAILURE;
  return JSON.stringify({ success: true, token: outcome.token, expires: outcome.expiresAt.toISOString() });
}

export function validateUserTokenJson(check: TokenCheck): string {
  if (!check.valid) return VALIDATE_TOKEN_JSON_INVALID;
  return JSON.stringify({ valid: true, expires: check.expiresAt.toISOString() });
}
