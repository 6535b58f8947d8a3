import { mkdirSync, writeFileSync } from 'node:fs';
import { dirname, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { formatDocument, openApiDocument } from './openapi-document.js';

/** Writes the OpenAPI document the route schemas describe to `docs/openapi.json` (`npm run openapi`). */
const target = resolve(dirname(fileURLToPath(import.meta.url)), '../docs/openapi.json');
mkdirSync(dirname(target), { recursive: true });
writeFileSync(target, formatDocument(await openApiDocument()));
console.log(`wrote ${target}`);
