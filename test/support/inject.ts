/**
 * Requests through the whole application without a socket, for tests: light-my-request (a
 * devDependency, as only tests use it) hands a fake request and response to the public
 * listener's request handler, exactly as node:http would.
 */
import { inject, type InjectOptions, type Response } from 'light-my-request';
import type { AsmxApp } from '../../src/http/app.js';

export type { InjectOptions, Response as InjectResponse } from 'light-my-request';

/** An application that tests can also call without a socket. */
export interface InjectableApp extends AsmxApp {
  inject(options: InjectOptions): Promise<Response>;
}

export function injectable(app: AsmxApp): InjectableApp {
  return { ...app, inject: (options) => inject((req, res) => app.server.emit('request', req, res), options) };
}
