import { expect, it } from 'vitest';
import { serviceEnvironment } from './service-environment.js';

it("gives a child service the parent's environment without the parent's service settings", () => {
  const parent = {
    PATH: '/bin',
    MIXTAPE_PAGE_MAX: '5',
    DATABASE_URL: 'x',
    PORT: '1',
    NODE_OPTIONS: '--inspect',
    REDIS_URL: 'redis://127.0.0.1:6379',
  };
  expect(serviceEnvironment(parent, { PORT: '2', LOG_LEVEL: 'warn' })).toEqual({
    PATH: '/bin',
    PORT: '2',
    LOG_LEVEL: 'warn',
  });
});
