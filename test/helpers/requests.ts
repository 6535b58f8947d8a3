import type { FastifyInstance, LightMyRequestResponse } from 'fastify';
import { expect } from 'vitest';

export interface PlaylistBody {
  id: number;
  name: string;
  songs: { id: number; title: string; artist: string }[];
}

export interface ErrorResponseBody {
  errormsg: string;
  logdata: { entry: number; date: number };
}

/** Asserts the one error body of the service and returns it. */
export function expectError(response: LightMyRequestResponse, status: number): ErrorResponseBody {
  expect(response.statusCode, response.body).toBe(status);
  expect(response.headers['content-type']).toMatch(/^application\/json/);
  expect(response.headers['x-content-type-options']).toBe('nosniff');
  expect(response.headers['x-request-id']).toMatch(/^\S{1,128}$/);
  const body = response.json<ErrorResponseBody>();
  expect(typeof body.errormsg).toBe('string');
  expect(body.errormsg.length).toBeGreaterThan(0);
  expect(Number.isSafeInteger(body.logdata.entry)).toBe(true);
  expect(Math.abs(body.logdata.date - Date.now() / 1000)).toBeLessThan(60);
  return body;
}

export async function createPlaylist(
  app: FastifyInstance,
  security: string,
  name: string,
  songIds: number[],
): Promise<PlaylistBody> {
  const response = await app.inject({
    method: 'POST',
    url: '/v3/playlist',
    headers: { security },
    payload: { name, songIds },
  });
  expect(response.statusCode, response.body).toBe(200);
  return response.json<PlaylistBody>();
}

/** A request with the caller's credential, its payload (if any) sent as JSON, and any more headers. */
export function sendAs(
  app: FastifyInstance,
  method: 'GET' | 'POST' | 'PUT' | 'PATCH' | 'DELETE',
  url: string,
  security: string,
  payload?: unknown,
  headers: Record<string, string> = {},
): Promise<LightMyRequestResponse> {
  return app.inject({
    method,
    url,
    headers: { security, ...(payload === undefined ? {} : { 'content-type': 'application/json' }), ...headers },
    ...(payload === undefined ? {} : { payload: JSON.stringify(payload) }),
  });
}
