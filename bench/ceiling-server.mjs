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
import { argValue } from './lib/args.mjs';
import { listenAsService } from './lib/listen.mjs';

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
listenAsService(server, host, port);
