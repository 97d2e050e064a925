// The one script of the service: a pending attempt's page fills in by itself. It fetches the page again when the
// page's data-refresh says (seconds; the server makes it half the time the attempt has waited, from a quarter second
// up to 3 s: serve/pages.py's next_look_s), from the page's data-wait where it gives one (a look the server holds
// until the result is stored, or some 20 s: serve/app/student.py's held_attempt_page, so one request sees the
// score the moment it is ready) and, once grading has ended, puts the new result into the status region in place: a timed reload of the whole page (a <meta> refresh) would move the reader's place and focus, which is
// why accessibility checks refuse it. Without JavaScript the page says to reload it, and everything else works the
// same.
(function () {
  "use strict";
  var result = document.getElementById("result");
  if (!result || !result.hasAttribute("data-refresh")) {
    return;
  }
  function after(region) {
    // bounded here as well, so that a page that says nothing sensible is not fetched in a tight loop; a held look
    // is spaced by the server's holding it, so it goes at the floor
    if (region.hasAttribute("data-wait")) {
      return 250;
    }
    var said = region.getAttribute("data-refresh");
    var seconds = said ? Number(said) : NaN;
    return Math.min(60, Math.max(0.25, isFinite(seconds) ? seconds : 3)) * 1000;
  }
  var held = result.getAttribute("data-wait");
  var wait = after(result);
  function look() {
    fetch(held || window.location.href, {credentials: "same-origin", cache: "no-store"}).then(function (answer) {
      if (!answer.ok) {
        throw new Error("status " + answer.status);
      }
      return answer.text();
    }).then(function (text) {
      var fresh = new DOMParser().parseFromString(text, "text/html").getElementById("result");
      if (!fresh) {
        return;  // no attempt page (a session that ended is sent to the sign-in page): stop looking
      }
      if (!fresh.hasAttribute("data-refresh")) {
        result.innerHTML = fresh.innerHTML;
        result.removeAttribute("data-refresh");
      } else {
        wait = after(fresh);
        held = fresh.getAttribute("data-wait");
        window.setTimeout(look, wait);
      }
    }).catch(function () {
      window.setTimeout(look, Math.max(wait, 3000) * 2);  // the server restarting, say: look again, less often
    });
  }
  window.setTimeout(look, wait);
}());
