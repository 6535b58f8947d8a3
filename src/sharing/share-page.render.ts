import { createHash } from 'node:crypto';
import { Eta } from 'eta';

/** A song of the page, as printed. */
export interface PageSong {
  readonly number: number;
  readonly title: string;
  readonly artist: string;
  readonly album: string;
  /** `3:07`, or empty when the catalog does not know it. */
  readonly length: string;
}

/** What the shared playlist's page shows. */
export interface SharePageView {
  readonly name: string;
  readonly owner: string;
  /** The page's own path (`/s/{token}`): the cover and the files are under it. */
  readonly path: string;
  readonly songs: readonly PageSong[];
  /** `12 songs · 47 min`. */
  readonly summary: string;
}

/**
 * The page's one style sheet, inline; the Content-Security-Policy allows it by its hash and nothing else of the sort.
 * System fonts, light and dark, one column on a phone and a cover beside the title from 720 px on; every text may
 * wrap anywhere, so no name is too long for a narrow screen.
 */
const STYLE = `
:root{color-scheme:light dark;--bg:#f6f4f1;--fg:#1d1b19;--muted:#6d675f;--card:#fff;--line:#e4dfd8;--accent:#b4441c;--accent-fg:#fff}
@media (prefers-color-scheme:dark){:root{--bg:#131211;--fg:#f3f0ec;--muted:#a8a198;--card:#1d1b1a;--line:#2f2c29;--accent:#f08a5d;--accent-fg:#1d1b19}}
*{box-sizing:border-box}
html{-webkit-text-size-adjust:100%;text-size-adjust:100%}
body{margin:0;background:var(--bg);color:var(--fg);font:16px/1.5 system-ui,-apple-system,"Segoe UI",Roboto,"Noto Sans","Helvetica Neue",Arial,sans-serif;overflow-wrap:anywhere}
main{max-width:980px;margin:0 auto;padding:20px 16px 40px}
.brand{font-weight:700;letter-spacing:.02em;color:var(--muted);font-size:14px;margin:0 0 20px}
.brand b{color:var(--accent)}
.hero{display:grid;gap:20px}
@media (min-width:720px){main{padding:40px 32px 56px}.hero{grid-template-columns:260px minmax(0,1fr);gap:36px;align-items:end}}
.cover{display:block;width:100%;max-width:300px;height:auto;aspect-ratio:1;border-radius:14px;background:var(--line);box-shadow:0 12px 32px rgb(0 0 0/.18)}
.kicker{margin:0;text-transform:uppercase;letter-spacing:.1em;font-size:12px;font-weight:700;color:var(--muted)}
h1{margin:6px 0 8px;font-size:clamp(28px,7vw,52px);line-height:1.08;letter-spacing:-.01em}
.meta{margin:0;color:var(--muted)}
.meta strong{color:var(--fg)}
.files{display:flex;flex-wrap:wrap;gap:8px;margin:18px 0 0;padding:0;list-style:none}
.files a{display:inline-block;padding:8px 14px;border-radius:999px;background:var(--accent);color:var(--accent-fg);font-weight:600;font-size:14px;text-decoration:none}
.files a:focus-visible,.files a:hover{outline:2px solid var(--fg);outline-offset:2px}
.songs{margin:32px 0 0;padding:0;list-style:none;border-top:1px solid var(--line)}
.songs li{display:grid;grid-template-columns:2.2em minmax(0,1fr) auto;column-gap:12px;padding:10px 4px;border-bottom:1px solid var(--line)}
.n,.len{color:var(--muted);font-variant-numeric:tabular-nums}
.n{text-align:right}
.title{font-weight:600}
.by{grid-column:2/4;color:var(--muted);font-size:14px}
.album:not(:empty)::before{content:" · "}
.songs .heading{display:none}
@media (min-width:720px){
.songs li{grid-template-columns:2.2em minmax(0,2fr) minmax(0,1.4fr) minmax(0,1.4fr) 5.5em;align-items:baseline}
.songs li>*,.by>*{grid-row:1}
.title{grid-column:2}.artist{grid-column:3}.album{grid-column:4}.len{grid-column:5;text-align:right}
.by{display:contents;font-size:15px}
.album:not(:empty)::before{content:none}
.songs .heading{display:grid;color:var(--muted);font-size:12px;text-transform:uppercase;letter-spacing:.08em;font-weight:700}
}
.empty{color:var(--muted);margin:24px 0 0}
footer{margin-top:32px;color:var(--muted);font-size:13px}
.missing{max-width:520px;margin:12vh auto 0;text-align:center}
.missing h1{font-size:clamp(24px,6vw,36px)}
`;

/**
 * The page's `Content-Security-Policy`: no script at all, images from this origin only (the cover), the one inline
 * style sheet by its hash, no base URL, no form, and not to be framed.
 */
export const SHARE_PAGE_CSP = [
  "default-src 'none'",
  "img-src 'self'",
  `style-src 'sha256-${createHash('sha256').update(STYLE, 'utf8').digest('base64')}'`,
  "base-uri 'none'",
  "form-action 'none'",
  "frame-ancestors 'none'",
].join('; ');

const HEAD = `<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<meta name="robots" content="noindex">
<meta name="referrer" content="no-referrer">
<title><%= it.title %></title>
<% if (it.icon) { %><link rel="icon" href="<%= it.icon %>">
<% } %><style><%~ it.style %></style>
</head>
`;

const PAGE = `<%~ include('@head', { title: it.name + ' · shared by ' + it.owner + ' · Mixtape', icon: it.path + '/image?size=64', style: it.style }) %>
<body>
<main>
<p class="brand"><b>●</b> Mixtape</p>
<header class="hero">
<img class="cover" src="<%= it.path %>/image?size=600" width="300" height="300" alt="Cover of <%= it.name %>">
<div>
<p class="kicker">Playlist</p>
<h1><%= it.name %></h1>
<p class="meta">shared by <strong><%= it.owner %></strong> · <%= it.summary %></p>
<ul class="files" aria-label="Download">
<li><a href="<%= it.path %>?format=xspf" download>XSPF</a></li>
<li><a href="<%= it.path %>?format=jspf" download>JSPF</a></li>
<li><a href="<%= it.path %>?format=m3u8" download>M3U8</a></li>
</ul>
</div>
</header>
<% if (it.songs.length === 0) { %>
<p class="empty">This playlist has no songs yet.</p>
<% } else { %>
<ol class="songs">
<li class="heading" aria-hidden="true"><span class="n">#</span><span class="title">Title</span><span class="artist">Artist</span><span class="album">Album</span><span class="len">Length</span></li>
<% for (const song of it.songs) { %>
<li><span class="n"><%= song.number %></span><span class="title"><%= song.title %></span><span class="len"><%= song.length %></span><span class="by"><span class="artist"><%= song.artist %></span><span class="album"><%= song.album %></span></span></li>
<% } %>
</ol>
<% } %>
<footer>Shared with a link: anyone who has it sees this playlist as it is now.</footer>
</main>
</body>
</html>
`;

const MISSING = `<%~ include('@head', { title: 'Nothing here · Mixtape', icon: '', style: it.style }) %>
<body>
<main class="missing">
<p class="brand"><b>●</b> Mixtape</p>
<h1>This link opens nothing</h1>
<p class="meta">It may have been revoked or have expired, or the playlist is gone. Ask whoever sent it for a new one.</p>
</main>
</body>
</html>
`;

// Eta escapes every `<%= %>` (autoEscape); `<%~ %>` prints only the style sheet and the head made here.
const eta = new Eta({ autoEscape: true, cache: true });
eta.loadTemplate('@head', HEAD);
const page = eta.compile(PAGE);
const missing = eta.compile(MISSING);

/** The shared playlist's page. */
export function renderSharePage(view: SharePageView): string {
  return eta.render(page, { ...view, style: STYLE });
}

/** The one page every token that opens nothing answers, byte for byte. */
export const MISSING_PAGE = eta.render(missing, { style: STYLE });

/** A song's length as a player shows it: `3:07`, `1:02:09`; empty when unknown. */
export function songLength(seconds: number | null): string {
  if (seconds === null) return '';
  const whole = Math.max(0, Math.round(seconds));
  const [h, m, s] = [Math.floor(whole / 3600), Math.floor((whole % 3600) / 60), whole % 60];
  const ss = String(s).padStart(2, '0');
  return h > 0 ? `${h}:${String(m).padStart(2, '0')}:${ss}` : `${m}:${ss}`;
}

/** `12 songs · 47 min`, `1 song · 3 min`, `2 songs · 1 h 05 min`; the length of the songs whose length is known. */
export function playlistSummary(lengths: readonly (number | null)[]): string {
  const count = `${lengths.length} song${lengths.length === 1 ? '' : 's'}`;
  const known = lengths.filter((l): l is number => l !== null);
  if (known.length === 0) return count;
  const minutes = Math.round(known.reduce((a, b) => a + b, 0) / 60);
  const total =
    minutes >= 60 ? `${Math.floor(minutes / 60)} h ${String(minutes % 60).padStart(2, '0')} min` : `${minutes} min`;
  return `${count} · ${known.length < lengths.length ? 'about ' : ''}${total}`;
}
