import swaggerUi from '@fastify/swagger-ui';
import type { FastifyInstance } from 'fastify';
import { ALIAS_TAG } from './responses.js';

const CASSETTE = `<rect x="1" y="6" width="30" height="20" rx="3" fill="#e4572e"/>
<rect x="5" y="9" width="22" height="9" rx="2" fill="#fff"/>
<circle cx="11" cy="13.5" r="2.5" fill="#333"/><circle cx="21" cy="13.5" r="2.5" fill="#333"/>
<path d="M8 26l2-5h12l2 5z" fill="#333"/>`;

const FAVICON = `<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 32 32">${CASSETTE}</svg>`;

const LOGO = `<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 150 40" width="150" height="40">
<g transform="translate(0 4)">${CASSETTE}</g>
<text x="40" y="28" fill="#fff" font-family="sans-serif" font-size="24" font-weight="bold">Mixtape</text></svg>`;

/**
 * The page's own start script, in place of the plugin's: Swagger UI on `/v3/openapi.json` (the plugin's would load
 * its copy at `/docs/json`), Mixtape's logo in the top bar (Swagger's carries an inline style that the policy below
 * refuses), and the aliases folded unless a link points into them. Paths are resolved from the script's own address,
 * `/docs/static/`, so the page works with and without a trailing slash.
 */
const START_SCRIPT = `'use strict';
(function () {
  var here = document.currentScript.src;
  var documentUrl = new URL('../../v3/openapi.json', here).href;
  var logo = ${JSON.stringify(`data:image/svg+xml;base64,${Buffer.from(LOGO).toString('base64')}`)};
  var aliasTag = ${JSON.stringify(ALIAS_TAG)};
  function MixtapeLogo(system) {
    var img = function () {
      return system.React.createElement('img', { src: logo, alt: 'Mixtape', height: 40 });
    };
    return { components: { Logo: img } };
  }
  window.addEventListener('load', function () {
    var ui = SwaggerUIBundle({
      dom_id: '#swagger-ui',
      url: documentUrl,
      deepLinking: true,
      presets: [SwaggerUIBundle.presets.apis, SwaggerUIStandalonePreset],
      plugins: [SwaggerUIBundle.plugins.DownloadUrl, MixtapeLogo],
      layout: 'StandaloneLayout',
      validatorUrl: null,
      onComplete: function () {
        if (decodeURIComponent(location.hash).indexOf('#/' + aliasTag) !== 0) {
          ui.layoutActions.show(['operations-tag', aliasTag], false);
        }
      },
    });
  });
})();
`;

/**
 * The page loads nothing from elsewhere and runs no inline script or style. `blob:` images are the answers that
 * "Try it out" shows (a cover); `data:` ones are Swagger UI's icons and the logo. The service speaks plain HTTP (TLS,
 * if any, ends at a proxy), so the policy does not ask browsers to upgrade requests.
 */
export const DOCS_CSP = [
  "default-src 'self'",
  "base-uri 'self'",
  "connect-src 'self'",
  "font-src 'self' data:",
  "form-action 'self'",
  "frame-ancestors 'self'",
  "img-src 'self' data: blob:",
  "object-src 'none'",
  "script-src 'self'",
  "script-src-attr 'none'",
  "style-src 'self'",
].join('; ');

const DOCS_PREFIX = '/docs';
const START_SCRIPT_ROUTE = `${DOCS_PREFIX}/static/swagger-initializer.js`;

/** The reference page at `/docs`, and `GET /` pointing at it. */
export async function registerDocsPage(app: FastifyInstance): Promise<void> {
  await app.register(swaggerUi, {
    routePrefix: DOCS_PREFIX,
    staticCSP: DOCS_CSP,
    theme: {
      title: 'Mixtape API reference',
      favicon: [{ filename: 'favicon.svg', rel: 'icon', type: 'image/svg+xml', sizes: 'any', content: FAVICON }],
    },
    uiHooks: {
      onRequest: (request, reply, done) => {
        if (request.routeOptions.url === START_SCRIPT_ROUTE) {
          void reply.type('application/javascript; charset=utf-8').send(START_SCRIPT);
          return;
        }
        done();
      },
    },
  });
  app.get('/', { schema: { hide: true } }, (_request, reply) => reply.redirect(DOCS_PREFIX, 302));
}
