import { isIP } from 'node:net';

/** Whether the client-declared IPAddress is a literal IPv4 or IPv6 address, exactly as sent. */
export function isValidIpAddress(text: string | null): boolean {
  return typeof text === 'string' && isIP(text) !== 0;
}
