"""Headless Chromium for the report's browser test: load an HTML file, run a probe inside the
page, and take screenshots. Chromium is the Debian `chromium` package (`.ci/run` installs it)."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
from html import unescape as html_unescape
from pathlib import Path
from typing import Any

import pytest

# Runs first in <head>: records script errors and console.error calls.
CAPTURE = """<script>window.__errors=[];
window.addEventListener('error',function(e){window.__errors.push('error: '+(e.message||(e.target&&(e.target.src||e.target.href))||'?'));},true);
(function(){var c=console.error;console.error=function(){window.__errors.push('console.error: '+[].join.call(arguments,' '));c.apply(console,arguments);};})();
</script>"""

# Measures the laid-out page in window `win` and writes the result into a <pre id="probe"> of
# the top document. Run last in the report's <body>, or from a wrapper page that shows the
# report in an <iframe> narrower than headless Chromium's 500 px minimum window.
MEASURE = """function __measure(win){var doc=win.document;
var vw=win.innerWidth,out={viewport:vw,scrollWidth:doc.documentElement.scrollWidth,charts:{},overflow:[],scrolling:[]};
['chart-status','chart-families','chart-compare'].forEach(function(id){
  var svg=doc.getElementById(id);if(!svg){out.charts[id]=null;return;}
  var r=svg.getBoundingClientRect(),s=win.getComputedStyle(svg);
  var bars=[].filter.call(svg.querySelectorAll('rect.bar'),function(b){var q=b.getBoundingClientRect();return q.width>0&&q.height>0;});
  out.charts[id]={width:r.width,height:r.height,left:r.left,right:r.right,visible:s.display!=='none'&&s.visibility!=='hidden',bars:bars.length};
});
[].forEach.call(doc.body.querySelectorAll('*'),function(el){
  if(el.closest('.scroll')||el.closest('svg'))return;
  var r=el.getBoundingClientRect();if(r.right>vw+1)out.overflow.push(el.tagName+(el.id?'#'+el.id:'')+' '+Math.round(r.right));
});
[].forEach.call(doc.querySelectorAll('.scroll'),function(el){if(el.scrollWidth>el.clientWidth+1)out.scrolling.push(el.firstElementChild&&el.firstElementChild.id||'table');});
out.badges=doc.querySelectorAll('.badge').length;out.wrapped=[];
[].forEach.call(doc.querySelectorAll('.badge'),function(el){
  var rects=el.getClientRects(),h=parseFloat(win.getComputedStyle(el).lineHeight)||20;
  if(rects.length!==1||el.getBoundingClientRect().height>1.5*h)out.wrapped.push(el.textContent+' '+rects.length+' '+Math.round(el.getBoundingClientRect().height));
});
out.narrowPaths=[];
[].forEach.call(doc.querySelectorAll('td.path'),function(el){var w=el.getBoundingClientRect().width;if(w&&w<110)out.narrowPaths.push(el.textContent+' '+Math.round(w));});
function statuses(id){return [].map.call(doc.querySelectorAll('#'+id+' tbody tr'),function(r){return r.cells[1].getAttribute('data-v');});}
var th=doc.querySelector('#file-list thead th:nth-child(2) button');
if(th){th.click();out.sorted=doc.querySelector('#file-list thead th:nth-child(2)').getAttribute('aria-sort');
  var v=statuses('file-list'),ok=true;for(var i=1;i<v.length;i++)if(parseFloat(v[i-1])>parseFloat(v[i]))ok=false;out.sortedAscending=ok;
  th.click();v=statuses('file-list');ok=true;for(i=1;i<v.length;i++)if(parseFloat(v[i-1])<parseFloat(v[i]))ok=false;out.sortedDescending=ok;}
var bar=doc.querySelector('.filters[data-for=file-list]');
if(bar){var sel=bar.querySelector('select[name=status]');out.filters={};
  [].forEach.call(sel.options,function(o){if(!o.value)return;sel.value=o.value;sel.dispatchEvent(new win.Event('change'));
    var rows=[].slice.call(doc.querySelectorAll('#file-list tbody tr')),shown=rows.filter(function(r){return !r.hidden;});
    out.filters[o.value]={shown:shown.length,right:shown.every(function(r){return r.getAttribute('data-status')===o.value;}),
      expected:rows.filter(function(r){return r.getAttribute('data-status')===o.value;}).length};});
  sel.value='';sel.dispatchEvent(new win.Event('change'));
  var text=bar.querySelector('input[name=text]');text.value='zz-no-such-file';text.dispatchEvent(new win.Event('input'));
  out.textFilterShown=[].filter.call(doc.querySelectorAll('#file-list tbody tr'),function(r){return !r.hidden;}).length;
  text.value='';text.dispatchEvent(new win.Event('input'));}
out.folders=doc.querySelectorAll('#folders-tree details').length;
out.tables={};[].forEach.call(doc.querySelectorAll('table[id]'),function(t){var box=t.parentElement;
  out.tables[t.id]={scrollWidth:box.scrollWidth,clientWidth:box.clientWidth,right:Math.round(t.getBoundingClientRect().right)};});
var legend=doc.getElementById('legend');
out.legendFirst=!!legend&&[].every.call(doc.querySelectorAll('table'),function(t){var r=t.getBoundingClientRect();
  return r.height===0||legend.getBoundingClientRect().bottom<=r.top;});
out.library=!!doc.getElementById('library');
out.requests=win.performance.getEntriesByType('resource').map(function(e){return e.name;});
out.order=[].map.call(doc.querySelectorAll('main > h2[id]'),function(h){return h.id;});
out.dark=win.matchMedia('(prefers-color-scheme: dark)').matches;
out.background=win.getComputedStyle(doc.body).backgroundColor;
out.errors=win.__errors||['the error capture did not run'];
var pre=document.createElement('pre');pre.id='probe';pre.textContent=JSON.stringify(out);document.body.appendChild(pre);
}"""
PROBE = "<script>" + MEASURE + "window.addEventListener('load',function(){__measure(window);});</script>"
MIN_WINDOW = 500  # headless Chromium does not make windows narrower than this


def _wrapper(page: Path, width: int, height: int) -> str:
    return (
        f'<!DOCTYPE html><html><head><meta charset="utf-8"><style>body{{margin:0}}iframe{{border:0}}</style></head><body>'
        f'<iframe id="f" width="{width}" height="{height}" src="{page.name}"></iframe>'
        f'<script>{MEASURE}document.getElementById("f").addEventListener("load",function(){{'
        f"__measure(this.contentWindow);}});</script></body></html>"
    )


BASE_FLAGS = (
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--hide-scrollbars",
    "--no-first-run",
    "--disable-extensions",
    "--disable-background-networking",
    "--enable-logging=stderr",
    "--v=0",
)


def chromium() -> str:
    """The Chromium binary; skips without it, except under CI (`CI` set), where it fails."""
    found = shutil.which("chromium") or shutil.which("chromium-browser")
    if found:
        return found
    if os.environ.get("CI"):
        pytest.fail(
            "chromium is not installed, and CI is set: `.ci/run` installs it with `apt-get install -y chromium`"
        )
    pytest.skip("chromium is not installed (Debian: `apt-get install -y chromium`); the CI run (`.ci/run`) installs it")


def _run(binary: str, args: list[str], profile: Path) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "HOME": str(profile)}
    return subprocess.run(
        [binary, *BASE_FLAGS, f"--user-data-dir={profile}", *args],
        capture_output=True,
        text=True,
        timeout=120,
        env=env,
        check=False,
    )


def probe(binary: str, html: str, width: int, height: int, work: Path, dark: bool = False) -> dict[str, Any]:
    """Load `html` at `width` x `height` CSS pixels and return what the probe measured, with
    the console errors Chromium logged. Widths under 500 px load the page in an iframe; `dark`
    asks for the dark colour scheme."""
    page = work / f"report-{width}{'-dark' if dark else ''}.html"
    narrow = width < MIN_WINDOW
    body = html.replace("<head>", "<head>" + CAPTURE, 1)
    page.write_text(body if narrow else body.replace("</body>", PROBE + "</body>", 1), encoding="utf-8")
    target = page
    if narrow:
        target = work / f"wrapper-{width}{'-dark' if dark else ''}.html"
        target.write_text(_wrapper(page, width, height), encoding="utf-8")
    window = f"{MIN_WINDOW + 20},{height + 20}" if narrow else f"{width},{height}"
    done = _run(
        binary,
        [
            f"--window-size={window}",
            "--allow-file-access-from-files",
            "--virtual-time-budget=3000",
            "--dump-dom",
            *DARK * dark,
            target.as_uri(),
        ],
        work / f"profile-{width}{'-dark' if dark else ''}",
    )
    found = re.search(r'<pre id="probe">(.*?)</pre>', done.stdout, re.DOTALL)
    assert found, f"the probe did not run (exit {done.returncode}): {done.stderr[-2000:]}"
    result: dict[str, Any] = json.loads(html_unescape(found.group(1)))
    result["console"] = [
        line for line in done.stderr.splitlines() if "CONSOLE" in line and ("rror" in line or "Uncaught" in line)
    ]
    return result


DARK = ("--blink-settings=preferredColorScheme=0", "--force-dark-mode")


def screenshot(binary: str, page: Path, out: Path, width: int, height: int, work: Path, dark: bool = False) -> None:
    done = _run(
        binary,
        [f"--window-size={width},{height}", f"--screenshot={out}", *DARK * dark, page.as_uri()],
        work / f"profile-shot-{width}{'-dark' if dark else ''}",
    )
    assert out.is_file() and out.stat().st_size > 1000, done.stderr[-2000:]


def screenshot_narrow(binary: str, page: Path, out: Path, width: int, height: int, work: Path) -> None:
    """A screenshot of `page` at `width` CSS pixels (under Chromium's 500 px minimum window): the
    page in an iframe that wide, at the left of a wider window."""
    wrapper = page.with_name(f"narrow-{width}.html")
    wrapper.write_text(
        f'<!DOCTYPE html><html><head><meta charset="utf-8"><style>body{{margin:0;background:#888}}iframe{{border:0}}'
        f'</style></head><body><iframe width="{width}" height="{height}" src="{page.name}"></iframe></body></html>',
        encoding="utf-8",
    )
    screenshot(binary, wrapper, out, MIN_WINDOW + 20, height, work)
