// Proves that a second object arrived intact and ran: marks the status box.
(function () {
  var el = document.getElementById("script-status");
  if (el) {
    el.textContent = "JavaScript loaded from sirocco ran at " + new Date().toISOString() + ".";
    el.className = "status ok";
  }
})();
