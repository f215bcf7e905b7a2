"""The report page's fixed parts: colours, the Content-Security-Policy, the stylesheet and the
script that sorts and filters tables; and the escaping every other part goes through."""

from __future__ import annotations

import re
from collections.abc import Sequence
from html import escape

COLOURS = {
    "blocked": "#8250df",
    "manual": "#cf222e",
    "unsafe": "#bc4c00",
    "auto": "#0969da",
    "done": "#1a7f37",
    "clean": "#6e7781",
    "safe": "#0969da",
}
CSP = "default-src 'none'; style-src 'unsafe-inline'; script-src 'unsafe-inline'; img-src data:"

CSS = """
:root{color-scheme:light dark;--fg:#1f2328;--muted:#59636e;--bg:#fff;--panel:#f6f8fa;--line:#d0d7de;--link:#0969da}
@media (prefers-color-scheme:dark){:root{--fg:#e6edf3;--muted:#9198a1;--bg:#0d1117;--panel:#161b22;--line:#3d444d;--link:#4493f8}}
*{box-sizing:border-box}
body{font:16px/1.5 system-ui,-apple-system,"Segoe UI",Roboto,sans-serif;margin:0;color:var(--fg);background:var(--bg)}
a{color:var(--link)}
main{max-width:1240px;margin:0 auto;padding:16px}
h1{font-size:1.6rem;margin:.5rem 0}h2{font-size:1.3rem;margin-top:2rem;border-bottom:1px solid var(--line)}
h3{font-size:1.1rem;margin:1rem 0 .25rem}
nav ul{list-style:none;padding:0;margin:.5rem 0;display:flex;flex-wrap:wrap;gap:4px 14px}
.scroll{overflow-x:auto;max-width:100%}
table{border-collapse:collapse;margin:.5rem 0 1rem;font-size:.95rem}
caption{text-align:left;font-weight:600;padding:.25rem 0}
th,td{border:1px solid var(--line);padding:.25rem .5rem;text-align:left;vertical-align:top}
thead th{background:var(--panel)}
td.n,th.n{text-align:right;font-variant-numeric:tabular-nums;white-space:nowrap}
td.path{min-width:16ch;overflow-wrap:anywhere}
code{font-family:ui-monospace,SFMono-Regular,Menlo,monospace;font-size:.9em;overflow-wrap:anywhere}
.badge{display:inline-block;white-space:nowrap;border-radius:1em;padding:0 .55em;font-size:.85em;font-weight:600;
line-height:1.6;color:#fff;vertical-align:baseline}
.badges{display:flex;flex-wrap:wrap;gap:6px;margin:.5rem 0;padding:0;list-style:none}
.charts{display:flex;flex-wrap:wrap;gap:24px}
figure{margin:0;flex:1 1 420px;min-width:0}
figcaption{font-weight:600}
svg{width:100%;height:auto;display:block}
#chart-status{height:44px}figure.narrow{max-width:760px}
svg text{fill:var(--fg)}svg text.in{fill:#fff}
.legend{list-style:none;padding:0;margin:.25rem 0;display:flex;flex-wrap:wrap;gap:4px 12px}
.sw{display:inline-block;width:12px;height:12px;margin-right:4px;vertical-align:middle;border-radius:2px}
.note{color:var(--muted)}
.big{font-size:1.15rem}
.cards{display:grid;grid-template-columns:repeat(auto-fill,minmax(min(100%,340px),1fr));gap:12px}
.card{border:1px solid var(--line);border-radius:6px;padding:8px 12px;background:var(--panel);min-width:0}
.card h3{margin-top:0}
th button{font:inherit;color:inherit;background:none;border:0;padding:0;cursor:pointer;text-decoration:underline dotted}
th[aria-sort=ascending] button::after{content:" \\25B2"}th[aria-sort=descending] button::after{content:" \\25BC"}
.filters{display:flex;flex-wrap:wrap;gap:6px 12px;align-items:center;margin:.5rem 0}
.filters label{white-space:nowrap;display:inline-flex;gap:4px;align-items:center;max-width:100%;min-width:0}
.filters select,.filters input{font:inherit;max-width:100%;min-width:0;flex:0 1 auto;color:var(--fg);background:var(--bg);border:1px solid var(--line);border-radius:4px}
ul.items{padding-left:1.2rem}ul.items li{margin:.2rem 0;overflow-wrap:anywhere}
details.tree{margin:0 0 0 .9rem}details.tree>summary{cursor:pointer;padding:2px 0}
.tree-top{margin-left:0}
.fold{display:inline-flex;flex-wrap:wrap;gap:4px 8px;align-items:baseline}
.mini{display:inline-block;width:90px;height:10px;vertical-align:middle;border-radius:2px;overflow:hidden;background:var(--line)}
.mini span{display:block;float:left;height:100%}
.tag{display:inline-block;white-space:nowrap;font-size:.8em;color:var(--muted);border:1px solid var(--line);border-radius:4px;padding:0 .35em}
ul.statuses{list-style:none;padding:0;margin:.5rem 0;display:grid;gap:4px}
ul.statuses li{display:flex;gap:8px;align-items:baseline}ul.statuses .badge{min-width:6.5em;text-align:center}
@media (max-width:640px){
table.stack,table.stack tbody{display:block;width:100%}
table.stack caption{display:block}
table.stack thead{position:absolute;width:1px;height:1px;overflow:hidden;clip:rect(0 0 0 0);white-space:nowrap}
table.stack tr{display:flex;flex-wrap:wrap;gap:2px 14px;border:1px solid var(--line);border-radius:6px;padding:6px 8px;margin:0 0 8px}
table.stack tr[hidden]{display:none}
table.stack td{border:0;padding:0;text-align:left;min-width:0}
table.stack td[data-label]::before{content:attr(data-label) ": ";color:var(--muted)}
table.stack td.path{flex:1 1 100%}
table.stack td.path::before{content:none}
}
"""

SCRIPT = """
(function(){
  function val(row,col){var c=row.cells[col];return c?(c.getAttribute('data-v')||c.textContent):'';}
  [].forEach.call(document.querySelectorAll('table.sortable'),function(table){
    var heads=table.tHead.rows[0].cells;
    [].forEach.call(heads,function(th,col){
      var b=document.createElement('button');b.type='button';b.textContent=th.textContent;
      th.textContent='';th.appendChild(b);
      b.addEventListener('click',function(){
        var asc=th.getAttribute('aria-sort')!=='ascending';
        [].forEach.call(heads,function(h){h.removeAttribute('aria-sort');});
        th.setAttribute('aria-sort',asc?'ascending':'descending');
        var rows=[].slice.call(table.tBodies[0].rows);
        rows.sort(function(a,b){
          var x=val(a,col),y=val(b,col),nx=parseFloat(x),ny=parseFloat(y);
          var c=(!isNaN(nx)&&!isNaN(ny))?nx-ny:x.localeCompare(y);
          return asc?c:-c;
        });
        rows.forEach(function(r){table.tBodies[0].appendChild(r);});
      });
    });
  });
  [].forEach.call(document.querySelectorAll('.filters'),function(bar){
    var table=document.getElementById(bar.getAttribute('data-for'));if(!table)return;
    var inputs=bar.querySelectorAll('select,input'),count=bar.querySelector('.shown');
    function apply(){
      var want={};[].forEach.call(inputs,function(i){want[i.name]=i.value.toLowerCase();});
      var shown=0;
      [].forEach.call(table.tBodies[0].rows,function(r){
        var folder=r.getAttribute('data-folder')||'';
        var ok=(!want.status||r.getAttribute('data-status')===want.status)
          &&(!want.concept||(' '+(r.getAttribute('data-concepts')||'')+' ').indexOf(' '+want.concept+' ')>=0)
          &&(!want.folder||want.folder==='.'||folder===want.folder||folder.indexOf(want.folder+'/')===0)
          &&(!want.text||r.textContent.toLowerCase().indexOf(want.text)>=0);
        r.hidden=!ok;if(ok)shown++;
      });
      if(count)count.textContent=shown+' of '+table.tBodies[0].rows.length+' shown';
    }
    [].forEach.call(inputs,function(i){i.addEventListener('input',apply);i.addEventListener('change',apply);});
    apply();
  });
})();
"""


def esc(text: object) -> str:
    return escape(str(text), quote=True)


def code_spans(text: str) -> str:
    """Escaped text with `code` spans (as in finding messages) shown as code."""
    return re.sub(r"`([^`]+)`", r"<code>\1</code>", esc(text))


def badge(status: str, text: str | None = None) -> str:
    return f'<span class="badge" style="background:{COLOURS[status]}">{esc(text or status)}</span>'


def legend(keys: Sequence[str]) -> str:
    items = "".join(f'<li><span class="sw" style="background:{COLOURS[k]}"></span>{esc(k)}</li>' for k in keys)
    return f'<ul class="legend" aria-hidden="true">{items}</ul>'
