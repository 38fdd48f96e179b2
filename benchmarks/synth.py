"""A synthetic, verifiable encyclopedia: N passages about generated people, places, organisations and works,
with 2- and 3-hop questions whose gold passages are known by construction.

    python benchmarks/synth.py --n 10000 --out /tmp/synth-10k            # corpus.jsonl, questions.jsonl, synth.json
    graphrag-suite bench --dataset /tmp/synth-10k --methods dense,hipporag

Every fact is a pure function of ``(seed, kind, index)``: the birthplace of person 17 is a hash of those three
values modulo the number of places, and so on. So any passage, and any question's chain of gold passages, can be
computed on its own without a table of what came before; the corpus is written one passage at a time and memory
stays flat however large N is (N = 1,000,000 wrote 316 MB of JSONL in 1 min 45 s with a 19 MB peak RSS here).

Names are built from three-letter syllables (consonant, vowel, consonant) so they look like names and spaCy's
NER tags many of them; a name is the mixed-radix spelling of a scrambled index (an affine bijection), so names of
one kind never repeat. The passages reference each other (born in a place, worked for an organisation, founded
by a person, published by an organisation, ...); questions start from a work and follow those references.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import math
import random
from dataclasses import dataclass
from pathlib import Path
from typing import Iterator

_CONSONANTS, _VOWELS, _CODAS = "bdfghklmnprstvz", "aeiou", "lnrst"
# 375 syllables; every one is exactly three letters, so a stem of two of them parses one way only.
SYLLABLES = [c + v + e for c in _CONSONANTS for v in _VOWELS for e in _CODAS]
GIVEN_ENDINGS = ["a", "o", "en", "ia", "us", "el"]
SURNAME_ENDINGS = ["", "son", "ov", "ez", "ani", "berg"]
PLACE_SUFFIXES = ["ford", "ton", "ia", "burg", "mouth", "vale", "holm", "stad", "wick", "port", "field", "haven"]
ORG_FORMS = ["{} Press", "{} Institute", "The {} Society", "{} Academy", "{} Trust", "{} Company", "{} Guild",
             "{} Foundation"]
NOUNS = ["Lantern", "River", "Crown", "Garden", "Mirror", "Winter", "Harbour", "Archive", "Orchard", "Bell",
         "Compass", "Tower", "Shadow", "Voyage", "Letter", "Bridge"]
ADJECTIVES = ["Silent", "Golden", "Hollow", "Northern", "Last", "Broken", "Distant", "Quiet"]
TITLE_FORMS = ["The {n} of {s}", "{s} and the {n}", "A {n} for {s}", "The {a} {n} of {s}", "{s}'s {a} {n}",
               "Beyond the {n} of {s}"]
PROFESSIONS = ["painter", "novelist", "engineer", "historian", "composer", "physician", "architect", "botanist",
               "cartographer", "mathematician", "poet", "merchant"]
FIELDS = ["publishing", "shipbuilding", "natural history", "music education", "civil engineering", "medicine",
          "cartography", "the decorative arts", "printing", "astronomy"]
GENRES = ["novel", "collection of poems", "history", "treatise", "travel memoir", "play", "atlas", "biography"]
TERRAIN = ["on the banks of a slow river", "at the foot of a limestone ridge", "on a sheltered bay",
           "among low hills", "at the edge of a wide marsh", "on an old trade road"]
INDUSTRY = ["wool weaving", "fishing", "glassmaking", "shipbuilding", "brewing", "copper mining", "printing",
            "the salt trade"]

# The corpus interleaves the four kinds in this repeating block of 20 passages (8 people, 7 works,
# 3 organisations, 2 places), so any N >= 20 has every kind and the file is mixed, not sorted by kind.
BLOCK = "PWOPWLPWPOWPWPLWPWOP"
KINDS = {"P": "person", "W": "work", "O": "org", "L": "place"}


def _hash(seed: int, tag: str, i: int) -> int:
    """A stable 64-bit hash (Python's hash() is salted per process, so not reproducible)."""
    return int.from_bytes(hashlib.blake2b(f"{seed}:{tag}:{i}".encode(), digest_size=8).digest(), "little")


def _unit(seed: int, tag: str, i: int) -> float:
    return _hash(seed, tag, i) / 2.0**64


def _scramble(i: int, capacity: int, seed: int, tag: str) -> int:
    """An affine bijection of [0, capacity): distinct indices give distinct names, neighbours look unrelated."""
    a = 1_000_003  # a prime that divides none of the capacities (products of 2, 3, 5, 7, 13, 16, 375)
    b = _hash(seed, tag, -1) % capacity
    return (i * a + b) % capacity


def _digits(j: int, radices: list[int]) -> list[int]:
    out = []
    for r in radices:
        j, d = divmod(j, r)
        out.append(d)
    return out


def _core(org: str) -> str:
    """An organisation's name without its article, for "the {}" in running text ("The X Society" -> "X Society")."""
    return org[4:] if org.startswith("The ") else org


def _stem(a: int, b: int) -> str:
    return (SYLLABLES[a] + SYLLABLES[b]).capitalize()


@dataclass(frozen=True)
class Synth:
    """The encyclopedia of ``n`` passages for ``seed``: names, facts and passages by (kind, index)."""

    n: int
    seed: int = 0

    def __post_init__(self) -> None:
        if self.n < len(BLOCK):
            raise ValueError(f"n must be at least {len(BLOCK)} (one passage of every kind)")

    # -- layout -------------------------------------------------------------------------------------
    def count(self, kind: str) -> int:
        """How many passages of ``kind`` ("person", "work", "org", "place") a corpus of n holds."""
        letter = next(k for k, v in KINDS.items() if v == kind)
        blocks, rest = divmod(self.n, len(BLOCK))
        return blocks * BLOCK.count(letter) + BLOCK[:rest].count(letter)

    def slot(self, t: int) -> tuple[str, int]:
        """The (kind, index) of the t-th passage in the file."""
        block, pos = divmod(t, len(BLOCK))
        letter = BLOCK[pos]
        return KINDS[letter], block * BLOCK.count(letter) + BLOCK[:pos].count(letter)

    @staticmethod
    def pid(kind: str, i: int) -> str:
        return f"{kind}-{i:07d}"

    # -- names (unique within a kind by construction) -------------------------------------------------
    def person_name(self, i: int) -> str:
        radices = [len(SYLLABLES), len(GIVEN_ENDINGS), len(SYLLABLES), len(SYLLABLES), len(SURNAME_ENDINGS)]
        g, ge, s1, s2, se = _digits(_scramble(i, math.prod(radices), self.seed, "person"), radices)
        return f"{SYLLABLES[g].capitalize()}{GIVEN_ENDINGS[ge]} {_stem(s1, s2)}{SURNAME_ENDINGS[se]}"

    def place_name(self, i: int) -> str:
        radices = [len(SYLLABLES), len(SYLLABLES), len(PLACE_SUFFIXES)]
        s1, s2, suf = _digits(_scramble(i, math.prod(radices), self.seed, "place"), radices)
        return _stem(s1, s2) + PLACE_SUFFIXES[suf]

    def org_name(self, i: int) -> str:
        radices = [len(SYLLABLES), len(SYLLABLES), len(ORG_FORMS)]
        s1, s2, form = _digits(_scramble(i, math.prod(radices), self.seed, "org"), radices)
        return ORG_FORMS[form].format(_stem(s1, s2))

    def work_title(self, i: int) -> str:
        radices = [len(SYLLABLES), len(SYLLABLES), len(TITLE_FORMS), len(NOUNS), len(ADJECTIVES)]
        s1, s2, form, noun, adj = _digits(_scramble(i, math.prod(radices), self.seed, "work"), radices)
        return TITLE_FORMS[form].format(s=_stem(s1, s2), n=NOUNS[noun], a=ADJECTIVES[adj])

    def name(self, kind: str, i: int) -> str:
        return {"person": self.person_name, "place": self.place_name, "org": self.org_name,
                "work": self.work_title}[kind](i)

    # -- facts (pure functions of seed, kind and index) -----------------------------------------------
    def _pick(self, tag: str, i: int, kind: str, skew: float = 1.0) -> int:
        # skew > 1 favours low indices: a few places are hubs (capitals), as in a real encyclopedia.
        return min(int(self.count(kind) * _unit(self.seed, tag, i) ** skew), self.count(kind) - 1)

    def birthplace(self, person: int) -> int:
        return self._pick("born", person, "place", skew=1.6)

    def birth_year(self, person: int) -> int:
        return 1700 + _hash(self.seed, "year", person) % 250

    def employer(self, person: int) -> int:
        return self._pick("employer", person, "org")

    def founder(self, org: int) -> int:
        return self._pick("founder", org, "person")

    def founded_in(self, org: int) -> int:
        return self._pick("founded_in", org, "place", skew=1.6)

    def founded_year(self, org: int) -> int:
        return self.birth_year(self.founder(org)) + 25 + _hash(self.seed, "fy", org) % 35

    def author(self, work: int) -> int:
        return self._pick("author", work, "person")

    def publisher(self, work: int) -> int:
        return self._pick("publisher", work, "org")

    def published_year(self, work: int) -> int:
        return self.birth_year(self.author(work)) + 22 + _hash(self.seed, "py", work) % 40

    # -- passages ------------------------------------------------------------------------------------
    def passage(self, kind: str, i: int) -> dict:
        rng = random.Random(_hash(self.seed, "text-" + kind, i))  # template choices only, never facts
        text = {"person": self._person_text, "place": self._place_text, "org": self._org_text,
                "work": self._work_text}[kind](i, rng)
        return {"id": self.pid(kind, i), "title": self.name(kind, i), "text": text}

    def _person_text(self, i: int, rng: random.Random) -> str:
        name, place, year = self.person_name(i), self.place_name(self.birthplace(i)), self.birth_year(i)
        job, org = rng.choice(PROFESSIONS), _core(self.org_name(self.employer(i)))
        surname = name.split()[-1]
        born = rng.choice([f"{name} (born {year} in {place}) was a {job}.",
                           f"{name} was a {job}, born in {place} in {year}.",
                           f"Born in {place} in {year}, {name} became a well-known {job}."])
        work = rng.choice([f"{surname} spent many years working for the {org}.",
                           f"For most of a long career {surname} was employed by the {org}.",
                           f"Later in life {surname} joined the {org}, where the rest of the career was spent."])
        other = self.place_name(self._pick("moved", i, "place"))
        extra = rng.choice([f"After some years abroad, {surname} settled in {other}.",
                            f"{surname} also lived for a time in {other}, where several early letters were written.",
                            f"Contemporaries remembered {surname} as patient, exacting and generous to students."])
        closing = rng.choice([f"The archive of {surname}'s papers is kept in {other}.",
                              f"{surname}'s methods were widely copied by the next generation of {job}s.",
                              f"A street in {place} is named after {surname}."])
        return " ".join([born, work, extra, closing])

    def _place_text(self, i: int, rng: random.Random) -> str:
        name, near = self.place_name(i), self.place_name(self._pick("near", i, "place"))
        people = 1_000 * (1 + _hash(self.seed, "pop", i) % 900)
        first = rng.choice([f"{name} is a town {rng.choice(TERRAIN)}, about {people:,} people live there.",
                            f"{name} is a settlement {rng.choice(TERRAIN)} with a population of about {people:,}.",
                            f"Lying {rng.choice(TERRAIN)}, {name} has around {people:,} inhabitants."])
        trade = rng.choice(INDUSTRY)
        second = rng.choice([f"Its economy grew on {trade}.",
                             f"For centuries the town lived from {trade}.",
                             f"{trade.capitalize()} was its main industry until the railway came."])
        third = rng.choice([f"The nearest larger town is {near}.",
                            f"A road built in the eighteenth century links it with {near}.",
                            f"{name} and {near} have held a joint market since the middle ages."])
        return " ".join([first, second, third])

    def _org_text(self, i: int, rng: random.Random) -> str:
        name, founder = _core(self.org_name(i)), self.person_name(self.founder(i))
        place, year, field = self.place_name(self.founded_in(i)), self.founded_year(i), rng.choice(FIELDS)
        first = rng.choice([f"The {name} is an organisation devoted to {field}, founded in {place} in {year}.",
                            f"Founded in {year} in {place}, the {name} works in {field}.",
                            f"The {name} was established in {place} in {year} to promote {field}."])
        second = rng.choice([f"Its founder was {founder}.",
                             f"It was founded by {founder}, who led it for its first decades.",
                             f"{founder} founded it with money from a family inheritance."])
        branch = self.place_name(self._pick("branch", i, "place"))
        third = rng.choice([f"A second office opened in {branch} some years later.",
                            f"Today its largest collection is housed in {branch}.",
                            f"Its annual meeting alternates between {place} and {branch}."])
        members = 20 * (1 + _hash(self.seed, "members", i) % 400)
        later = rng.choice([f"At its height it had about {members:,} members.",
                            "It publishes a yearly report on its activities.",
                            "Its statutes were revised twice in the following century."])
        return " ".join([first, second, third, later])

    def _work_text(self, i: int, rng: random.Random) -> str:
        title, author = self.work_title(i), self.person_name(self.author(i))
        org, year, genre = _core(self.org_name(self.publisher(i))), self.published_year(i), rng.choice(GENRES)
        setting = self.place_name(self._pick("setting", i, "place"))
        first = rng.choice([f"{title} is a {genre} by {author}, published in {year}.",
                            f"{title} is a {genre} written by {author} and first printed in {year}.",
                            f"Written by {author}, {title} is a {genre} that appeared in {year}."])
        second = rng.choice([f"It was published by the {org}.",
                             f"The first edition was brought out by the {org}.",
                             f"The {org} published it after two other houses had turned it down."])
        third = rng.choice([f"Much of it is set in {setting}.",
                            f"Its opening chapters take place in {setting}.",
                            f"Critics praised its portrait of {setting}."])
        later = rng.choice([f"A revised edition followed {2 + _hash(self.seed, 'rev', i) % 20} years later.",
                            "It was translated into several languages within a generation.",
                            "The manuscript survives, with the author's corrections in the margins.",
                            "Reviews at the time were mixed, but its reputation grew after the author's death."])
        return " ".join([first, second, third, later])

    def passages(self) -> Iterator[dict]:
        """Every passage in file order, one at a time."""
        for t in range(self.n):
            yield self.passage(*self.slot(t))

    # -- questions ------------------------------------------------------------------------------------
    QUESTION_TYPES = ("2hop_author_birthplace", "2hop_publisher_city", "2hop_publisher_year",
                      "3hop_publisher_founder_birthplace", "3hop_author_employer_city")

    def question(self, q: int) -> dict:
        """Question ``q``: its text, answer, gold passages and the chain (each gold passage names the next hop)."""
        works = self.count("work")
        w = _scramble(q % works, works, self.seed, "question") if math.gcd(1_000_003, works) == 1 else q % works
        kind = self.QUESTION_TYPES[q % len(self.QUESTION_TYPES)]
        title = self.work_title(w)
        rng = random.Random(_hash(self.seed, "qtext", q))
        a, o = self.author(w), self.publisher(w)
        if kind == "2hop_author_birthplace":
            chain = [("work", w, self.person_name(a)), ("person", a, self.place_name(self.birthplace(a)))]
            text = rng.choice([f"Where was the author of {title} born?", f"In which town was the writer of {title} born?"])
        elif kind == "2hop_publisher_city":
            chain = [("work", w, _core(self.org_name(o))), ("org", o, self.place_name(self.founded_in(o)))]
            text = rng.choice([f"In which town was the organisation that published {title} founded?",
                               f"Where was the publisher of {title} founded?"])
        elif kind == "2hop_publisher_year":
            chain = [("work", w, _core(self.org_name(o))), ("org", o, str(self.founded_year(o)))]
            text = rng.choice([f"In what year was the publisher of {title} founded?",
                               f"When was the organisation that published {title} established?"])
        elif kind == "3hop_publisher_founder_birthplace":
            f = self.founder(o)
            chain = [("work", w, _core(self.org_name(o))), ("org", o, self.person_name(f)),
                     ("person", f, self.place_name(self.birthplace(f)))]
            text = rng.choice([f"Where was the founder of the organisation that published {title} born?",
                               f"In which town was the person who founded the publisher of {title} born?"])
        else:
            e = self.employer(a)
            chain = [("work", w, self.person_name(a)), ("person", a, _core(self.org_name(e))),
                     ("org", e, self.place_name(self.founded_in(e)))]
            text = rng.choice([f"Where was the organisation that employed the author of {title} founded?",
                               f"In which town was the employer of the writer of {title} founded?"])
        gold = [self.pid(k, i) for k, i, _ in chain]
        return {"id": f"synth-q{q:05d}", "question": text, "answers": [chain[-1][2]], "supporting_ids": gold,
                "supporting_titles": [self.name(k, i) for k, i, _ in chain], "type": kind,
                "chain": [{"id": self.pid(k, i), "mentions": m} for k, i, m in chain]}

    def questions(self, count: int) -> Iterator[dict]:
        # one question per work at most: a corpus with fewer works gets fewer questions
        for q in range(min(count, self.count("work"))):
            yield self.question(q)


def write(out: str | Path, n: int, seed: int = 0, questions: int = 200) -> Path:
    """Write ``corpus.jsonl``, ``questions.jsonl`` and ``synth.json`` (parameters, counts) into ``out``."""
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    synth = Synth(n, seed)
    with (out / "corpus.jsonl").open("w", encoding="utf-8") as f:
        for passage in synth.passages():
            f.write(json.dumps(passage, ensure_ascii=False) + "\n")
    with (out / "questions.jsonl").open("w", encoding="utf-8") as f:
        written = 0
        for question in synth.questions(questions):
            f.write(json.dumps(question, ensure_ascii=False) + "\n")
            written += 1
    meta = {"generator": "benchmarks/synth.py", "n": n, "seed": seed, "questions": written,
            "counts": {k: synth.count(k) for k in ("person", "work", "org", "place")}}
    (out / "synth.json").write_text(json.dumps(meta, indent=1) + "\n", encoding="utf-8")
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--n", type=int, default=1000, help="passages")
    ap.add_argument("--out", required=True, help="folder to write the dataset into")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--questions", type=int, default=200)
    args = ap.parse_args()
    print(write(args.out, args.n, args.seed, args.questions))


if __name__ == "__main__":
    main()
