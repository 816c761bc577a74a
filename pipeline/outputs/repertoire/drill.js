// The repertoire explorer's drill (issue 45; our own code, no library; MIT like the project). The
// student plays their side of the tree; at the opponent's turn a reply is drawn from the predicted
// distribution at the rating (each reply node's "p", the unexplored rest left out); when the reply
// drawn is a trap, the student must find its punishment (its first move). A line ends at a leaf or
// after the punishment, with one sentence on it, and the next line starts.
//
// Mistakes are remembered in localStorage under "diffimax-drill " + the repertoire's key (its
// start, colour and rating), each position named by its moves from the tree's start (UCI, so a
// tree grown again keeps them) with how many times it was missed: {"version": 1, "mistakes":
// {"e2e4 e7e5": {"misses": 2, "where": "after 1.e4 e5"}}}. A new line goes first to the missed
// position with the most misses (the first in the tree among equals): the opponent's replies on
// the way to it are the ones that lead there. A right answer there takes one miss off; at none, the
// position is forgotten. `?seed=N` in the page's address draws the replies from a seeded
// generator (tests, a reproducible session); Math.random otherwise.
var diffimaxDrill = (function () {
  "use strict";
  var PREFIX = "diffimax-drill ";
  // A seeded generator on [0, 1) (mulberry32).
  function seeded(seed) {
    var a = seed >>> 0;
    return function () {
      a = (a + 0x6d2b79f5) >>> 0;
      var t = a;
      t = Math.imul(t ^ (t >>> 15), t | 1);
      t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
      return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
    };
  }
  function generator(search) {
    var match = /[?&]seed=(\d+)/.exec(search || "");
    return match ? seeded(Number(match[1])) : Math.random;
  }
  // A move as typed, for comparing: no move number, no check or comment marks, castling with Os.
  function normalize(text) {
    return String(text)
      .trim()
      .replace(/^\d+\s*\.+\s*/, "")
      .replace(/[+#!?]+$/, "")
      .replace(/^[0o]-[0o]-[0o]$/i, "O-O-O")
      .replace(/^[0o]-[0o]$/i, "O-O");
  }
  // "5...Qxg2" -> "Qxg2".
  function bare(label) {
    return label.replace(/^\d+\.+/, "");
  }
  // Numbered SAN tokens ("4.Nxe5", "4...Qg5", "5.Nxf7") as a line is read: "4.Nxe5 Qg5 5.Nxf7".
  function lineText(labels) {
    return labels
      .map(function (label, index) {
        return index > 0 && /^\d+\.\.\./.test(label) ? bare(label) : label;
      })
      .join(" ");
  }
  // The squares after a move in UCI (castling moves the rook, en passant takes the pawn).
  function after(squares, uci) {
    var moved = {};
    for (var name in squares) {
      moved[name] = squares[name];
    }
    var from = uci.slice(0, 2);
    var to = uci.slice(2, 4);
    var piece = moved[from];
    delete moved[from];
    if ((piece === "K" || piece === "k") && Math.abs(from.charCodeAt(0) - to.charCodeAt(0)) === 2) {
      var rookFrom = (to[0] === "g" ? "h" : "a") + from[1];
      moved[(to[0] === "g" ? "f" : "d") + from[1]] = moved[rookFrom];
      delete moved[rookFrom];
    }
    if ((piece === "P" || piece === "p") && from[0] !== to[0] && !moved[to]) {
      delete moved[to[0] + from[1]];
    }
    if (uci.length > 4) {
      piece = piece === piece.toUpperCase() ? uci[4].toUpperCase() : uci[4];
    }
    moved[to] = piece;
    return moved;
  }
  function memory(key) {
    var name = PREFIX + key;
    var kept = { version: 1, mistakes: {} };
    var stored = true;
    try {
      var text = window.localStorage.getItem(name);
      if (text) {
        var read = JSON.parse(text);
        if (read && read.version === 1 && read.mistakes) {
          kept = read;
        }
      }
    } catch (error) {
      stored = false;
    }
    return {
      stored: function () {
        return stored;
      },
      mistakes: function () {
        return kept.mistakes;
      },
      save: function () {
        try {
          window.localStorage.setItem(name, JSON.stringify(kept));
        } catch (error) {
          stored = false;
        }
      },
      forget: function () {
        kept = { version: 1, mistakes: {} };
        try {
          window.localStorage.removeItem(name);
        } catch (error) {
          stored = false;
        }
      },
    };
  }
  // `root`: the explorer's section; `nodes` by id; `draw(squares, uci)` shows a position on the
  // explorer's board with the move that led there (`uci` may be null).
  function setup(root, data, nodes, draw) {
    var info = data.drill;
    var panel = root.querySelector(".drill");
    var prompt = panel.querySelector(".drill-prompt");
    var feedback = panel.querySelector(".drill-feedback");
    var input = panel.querySelector("input.drill-move");
    var summaryLine = panel.querySelector(".drill-summary");
    var memoryLine = panel.querySelector(".drill-memory");
    var random = generator(window.location.search);
    var kept = memory(info.key);
    var placement = diffimaxBoard.placement;
    var player = info.player;
    var opponent = info.opponent;
    var rootId = data.nodes[0].id;
    // Each node's moves from the tree's start (the key its mistakes are kept under), and back.
    var keys = {};
    var byKey = {};
    data.nodes.forEach(function (node) {
      var key = node.parent === null ? "" : (keys[node.parent] ? keys[node.parent] + " " : "") + node.uci;
      keys[node.id] = key;
      byKey[key] = node.id;
    });
    var line = null;
    var count = 0;
    function path(id) {
      var found = [];
      for (var n = nodes[id]; n && n.parent !== null; n = nodes[n.parent]) {
        found.unshift(n.id);
      }
      return found;
    }
    function where(id) {
      var labels = path(id).map(function (n) {
        return nodes[n].label;
      });
      var before = info.before;
      if (!labels.length) {
        return before ? "after " + before : "at the start";
      }
      var text = lineText(labels);
      return "after " + (before ? before + " " + text.replace(/^\d+\.\.\./, "") : text);
    }
    function recommended(node) {
      var found = node.children.filter(function (id) {
        return nodes[id].recommended;
      });
      return found.length ? nodes[found[0]] : null;
    }
    // A remembered position the drill can reach: the tree has it, and the player's moves on the
    // way are the recommended ones (the ones the drill plays).
    function reachable(id) {
      return path(id).every(function (n) {
        return nodes[n].mover !== "player" || nodes[n].recommended;
      });
    }
    // The remembered position to drill first: the most misses, then the first in the tree.
    function target() {
      var best = null;
      var mistakes = kept.mistakes();
      for (var key in mistakes) {
        var id = byKey[key];
        if (id === undefined || !reachable(id)) {
          continue;
        }
        var misses = mistakes[key].misses;
        if (!best || misses > best.misses || (misses === best.misses && id < best.id)) {
          best = { id: id, misses: misses };
        }
      }
      return best ? best.id : null;
    }
    function showMemory() {
      var mistakes = kept.mistakes();
      var parts = [];
      for (var key in mistakes) {
        var m = mistakes[key];
        parts.push(m.where + " (missed " + (m.misses === 1 ? "once" : m.misses + " times") + ")");
      }
      var text = parts.length
        ? "Positions you missed, drilled first: " + parts.join("; ") + "."
        : "No mistakes remembered yet.";
      if (!kept.stored()) {
        text += " This browser does not keep them between sessions.";
      }
      memoryLine.textContent = text;
    }
    function remember(id, right) {
      var mistakes = kept.mistakes();
      var key = keys[id];
      if (right) {
        if (!mistakes[key]) {
          return;
        }
        mistakes[key].misses -= 1;
        if (mistakes[key].misses <= 0) {
          delete mistakes[key];
        }
      } else {
        mistakes[key] = { misses: (mistakes[key] ? mistakes[key].misses : 0) + 1, where: where(id) };
      }
      kept.save();
      showMemory();
    }
    function ask(id, asking) {
      line.asking = asking;
      panel.setAttribute("data-node", id);
      panel.setAttribute("data-asking", asking);
      input.value = "";
    }
    // The position after the node's move: the student's turn (a move or a punishment to find),
    // the opponent's (a reply drawn), or a leaf.
    function reach(id, said) {
      var node = nodes[id];
      line.at = id;
      if (line.forced.length && line.forced[0] === id) {
        line.forced.shift();
      }
      draw(placement(node.placement), node.uci);
      if (node.toMove === "opponent") {
        if (!node.children.length) {
          return finish(said + "The repertoire ends here.");
        }
        var forced = line.forced.length && node.children.indexOf(line.forced[0]) >= 0;
        var next = forced ? line.forced[0] : drawReply(node);
        var reply = nodes[next];
        line.labels.push(reply.label);
        var text = said + opponent + " plays " + reply.label;
        text += reply.share ? " (" + reply.share + " of " + info.rating + " players play it). " : ". ";
        return reach(next, text);
      }
      if (node.trap) {
        line.trap = node;
        ask(id, "punishment");
        prompt.textContent =
          "Line " + count + ". " + said + "It is a trap: it " + node.trap.loss + ". Find " + player + "'s punishment.";
        return;
      }
      var move = recommended(node);
      if (!move) {
        return finish(said + "The repertoire ends here.");
      }
      ask(id, "move");
      prompt.textContent = "Line " + count + ". " + said + "Your move as " + player + ", " + where(id) + "?";
    }
    // A reply at the opponent node, drawn by its probability among the reply nodes.
    function drawReply(node) {
      var total = 0;
      node.children.forEach(function (id) {
        total += nodes[id].p || 0;
      });
      if (total <= 0) {
        return node.children[Math.floor(random() * node.children.length)];
      }
      var r = random() * total;
      for (var i = 0; i < node.children.length; i++) {
        r -= nodes[node.children[i]].p || 0;
        if (r < 0) {
          return node.children[i];
        }
      }
      return node.children[node.children.length - 1];
    }
    // The legal move the student typed, as SAN (null: none); SAN as typed is read without its
    // number and marks, and UCI ("g1f3") is taken too. A node the drill never asks at has no list.
    function legalMove(node, typed) {
      if (!node.legal) {
        return normalize(typed);
      }
      var wanted = normalize(typed);
      var uci = String(typed).trim().toLowerCase();
      for (var i = 0; i < node.legal.length; i++) {
        if (normalize(node.legal[i]) === wanted || node.legalUci[i] === uci) {
          return node.legal[i];
        }
      }
      return null;
    }
    function answer() {
      if (!line || !line.asking) {
        return;
      }
      if (line.asking === "next") {
        feedback.textContent = "";
        return start();
      }
      var typed = input.value;
      if (!normalize(typed)) {
        feedback.className = "drill-feedback";
        feedback.textContent = "Type a move in SAN, e.g. Nf3 or exd5.";
        return;
      }
      var node = nodes[line.at];
      var san = legalMove(node, typed);
      if (san === null) {
        feedback.className = "drill-feedback wrong";
        feedback.textContent =
          normalize(typed) + " is not a legal move here. Try again: a move in SAN, e.g. Nf3 or exd5.";
        return;
      }
      var expected = line.asking === "punishment" ? node.trap.punish : recommended(node).label;
      // The number before the student's move as the drill says it: "5." or "5...".
      var number = expected.replace(/\.+.*$/, "") + (player === "White" ? "." : "...");
      var right = normalize(san) === normalize(bare(expected));
      // Another move the tree keeps within the safety margin is sound: no mistake, but the line
      // goes on with the repertoire's move, and the student is told which it is.
      var sound =
        !right &&
        line.asking === "move" &&
        (node.sound || []).some(function (move) {
          return normalize(move) === normalize(san);
        });
      line.asked += 1;
      remember(line.at, right || sound);
      if (right) {
        line.right += 1;
        feedback.className = "drill-feedback right";
        feedback.textContent = "Right: " + expected + ".";
      } else if (sound) {
        line.right += 1;
        feedback.className = "drill-feedback right";
        feedback.textContent =
          "Sound: " + number + san + " keeps within " + node.margin + " pawns of the best move, but this repertoire plays " +
          expected + ".";
      } else {
        feedback.className = "drill-feedback wrong";
        feedback.textContent =
          "Not " + number + san + ": the move is " + expected + ". This position comes back first next time.";
      }
      line.labels.push(expected);
      if (line.asking === "punishment") {
        line.end = after(placement(node.placement), node.trap.punishUci);
        line.endUci = node.trap.punishUci;
        draw(line.end, line.endUci);
        var trap = line.trap;
        var how = right ? "you punished it with " + expected : "its punishment is " + expected;
        return finish(
          "The trap " + trap.label + " (" + trap.share + " of " + info.rating + " players play it) came, and " + how + "."
        );
      }
      reach(recommended(node).id, "");
    }
    // The line's one sentence; the board keeps its last position until the next line.
    function finish(said) {
      var labels = line.labels.length ? lineText(line.labels) : "(no move)";
      var score = line.asked ? " You found " + line.right + " of " + line.asked + "." : "";
      summaryLine.textContent = "Line " + count + ": " + labels + ". " + said + score;
      panel.setAttribute("data-lines", count);
      ask(line.at, "next");
      prompt.textContent = "Line " + count + " done. Press Enter or New line for the next one.";
    }
    function start() {
      var goal = target();
      count += 1;
      line = {
        forced: goal === null ? [] : path(goal),
        labels: [],
        asked: 0,
        right: 0,
        trap: null,
        at: rootId,
        asking: "",
        end: null,
        endUci: null,
      };
      reach(rootId, goal === null ? "" : "Back to a position you missed (" + where(goal) + "). ");
    }
    panel.querySelector(".drill-play").addEventListener("click", answer);
    input.addEventListener("keydown", function (event) {
      if (event.key === "Enter") {
        event.preventDefault();
        answer();
      }
    });
    panel.querySelector(".drill-new").addEventListener("click", function () {
      feedback.textContent = "";
      start();
    });
    panel.querySelector(".drill-forget").addEventListener("click", function () {
      kept.forget();
      showMemory();
    });
    var started = false;
    return {
      // Shown: the first line starts (the drill keeps its line when the explorer is looked at).
      show: function () {
        if (!started) {
          started = true;
          showMemory();
          start();
        } else if (line.end) {
          draw(line.end, line.endUci);
        } else {
          draw(placement(nodes[line.at].placement), nodes[line.at].uci);
        }
        input.focus();
      },
    };
  }
  return { setup: setup, normalize: normalize, lineText: lineText, after: after, seeded: seeded };
})();
