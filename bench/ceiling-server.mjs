#!/usr/bin/env node
/**
 * The ceiling of the benchmark: a bare node:http server answering every request with a fixed,
 * correct ValidateUserToken SOAP 1.1 response (the bytes and headers svcapi-auth sends for a
 * valid token), without reading the request or touching any storage. Whatever svcapi-auth does
 * beyond this (parsing, dispatch, the store, logging, metrics) is the difference to it.
 *
 * Usage: node bench/ceiling-server.mjs [--port 0] [--host 127.0.0.1]
 * Prints `Service: http://HOST:PORT/Authentication.asmx` once listening.
 */
import { createServer } from 'node:http';
import { Buffer } from 'node:buffer';
import process from 'node:process';
import { argValue } from './lib/args.mjs';

const host = argValue('--host', '127.0.0.1');
const port = Number(argValue('--port', '0'));

const BODY = Buffer.from(
  '<?xml version="1.0" encoding="utf-8"?><soap:Envelope xmlns:soap="http://schemas.xmlsoap.org/soap/envelope/" ' +
  'xmlns:xsi="http://www.w3.org/2001/XMLSchema-instance" xmlns:xsd="http://www.w3.org/2001/XMLSchema"><soap:Body>' +
  '<ValidateUserTokenResponse xmlns="SVCAPI"><ValidateUserTokenResult>true</ValidateUserTokenResult></ValidateUserTokenResponse>' +
  '</soap:Body></soap:Envelope>',
  'utf8',
);
const HEADERS = {
  'content-type': 'text/xml; charset=utf-8',
  'cache-control': 'private, max-age=0',
  'x-content-type-options': 'nosniff',
  'content-length': String(BODY.length),
};

const server = createServer((req, res) => {
  // The body, if any, is discarded by node:http before the next request on the connection.
  req.resume();
  res.writeHead(200, HEADERS);
  res.end(BODY);
});
server.keepAliveTimeout = 72_000;
server.listen(port, host, () => {
  const address = server.address();
  process.stdout.write(`Service: http://${host}:${address.port}/Authentication.asmx\n`);
});
const stop = () => server.close(() => process.exit(0));
process.once('SIGTERM', stop);
process.once('SIGINT', stop);
