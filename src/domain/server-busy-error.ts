/**
 * The service is out of capacity for password hashing: ValidateUser cannot be answered now.
 * Not a credential failure (those are values), so it is an exception the HTTP layer turns into
 * a `soap:Server` "Server too busy" fault, as ASP.NET answers when its request queue is full.
 */
export class ServerBusyError extends Error {
  constructor() {
    super('Server too busy');
    this.name = 'ServerBusyError';
  }
}
