"""Knowledge updates worded as news (issue 17, item 4): a new job, a move, a break-up, a new school, a pet.

People rarely restate a fact the way they first said it. After "I work at Acme" comes
"I started at Stripe last week", "I got a new job at Stripe" or "my first day at Stripe";
after "I live in Berlin" comes "we finally moved — loving Lisbon" or "now that I'm in Lisbon";
在中文里是 "我跳槽到了腾讯"、"我搬到了上海"、"我们分手了"、"我开始读研了"、"我们领养了一只狗".
These patterns read them as the same attribute (predicate) as the plain statement, so the
projection's single-valued rule (architecture §6: the newer statement evolves the older, which stays
as history) applies. The rules extractor's guards apply to them as to every pattern: a
question, a supposition or a request states nothing; another subject ("a friend moved to
Lisbon") does not match; negated, hedged or reported heads ("she said we broke up") are dropped.

``OBJECT_PATTERNS`` name their object in the text; ``STATUS_PATTERNS`` state a fixed value of a
status attribute ("we broke up" -> relationship status "single").
"""

from __future__ import annotations

import re

from .phrases import ADV, I_OR_WE, OBJ, PREV, ZH_END, ZH_I_OR_WE, ZH_OBJ, ZH_TIME
from .phrases import I as I_

_X = re.IGNORECASE
_JOB = r"(?:job|position|role|offer|gig)"
_ZH_NAME = r"[^，。！？；,.!?\s]{1,20}?"
_ZH_WITH = r"(?:和|跟)[^，。！？；,.!?\s]{1,8}?"
# A place named as one ("Porto", "New York"): an object that cannot run on into "… is great"
PLACE = (r"(?-i:(?!(?:This|That|It|Life|Everything|Everyone|The|Here|There|Home|Work|Weather|Food)\b)"
         r"(?P<obj>[A-Z][\w'’-]*(?: [A-Z][\w'’-]*){0,3}))(?![\w'’-])")
_PRAISE = (r"(?:so |really |just |absolutely |pretty |very )?(?:lovely|great|amazing|beautiful|wonderful|nice|awesome|"
           r"gorgeous|fantastic|perfect|charming|incredible|stunning|home)\b")
_PETS = (r"(?:dog|cat|puppy|kitten|hamster|parrot|rabbit|bunny|turtle|horse|guinea pig|pup|kitty)s?")

# (predicate, pattern with a group "obj", extra predicate for the same object) — as rules._ENGLISH.
OBJECT_PATTERNS: list[tuple[str, re.Pattern, str | None]] = [
    # job / employer
    ("WORKS_AT", re.compile(I_ + r"(?:'ve| have)? " + ADV + r"(?:got|landed|accepted|took|started|began) (?:a |an |my |"
                            r"the )?(?:new |dream |first )?" + _JOB + r" (?:at|with|from) " + OBJ, _X), None),
    ("WORKS_AT", re.compile(r"\bmy (?:very )?first (?:day|week|month) (?:of work )?(?:at|with) " + OBJ, _X), None),
    ("WORKS_AT", re.compile(I_ + r"(?:'ve| have)? " + ADV + r"(?:got |been |was )?hired (?:at|by) " + OBJ, _X), None),
    # "I quit Acme and joined Google", "I left my job at Acme to join Google": the old employer is history
    ("WORKS_AT", re.compile(I_ + r"(?:'ve| have)? " + ADV + r"(?:quit|left) (?:my (?:job|position|role) (?:at|with) )?"
                            + PREV + r",? (?:and|to) (?:then )?(?:now )?(?:joined|join|started at|start at|started "
                            r"working (?:at|for)|start working (?:at|for)|went to work (?:at|for)|work (?:at|for)) "
                            + OBJ, _X), None),
    ("WORKS_AT", re.compile(I_ + r"(?:'m| am) " + ADV + r"working (?:at|for) " + OBJ, _X), None),
    ("WORKS_AT", re.compile(I_ + r"(?:'ve| have)? " + ADV + r"(?:switched|changed|moved) (?:jobs|companies|employers)"
                            r"(?: and (?:now )?(?:work|am|'m) (?:at|for|with))? (?:to )?" + OBJ, _X), None),
    # home
    ("LIVES_IN", re.compile(I_OR_WE + r"(?:'ve| have)? " + ADV + r"(?:moved|relocated) (?:back )?(?:to|into) " + OBJ,
                            _X), None),
    ("LIVES_IN", re.compile(I_OR_WE + r"(?:'ve| have)? " + ADV + r"moved(?: house| over| out)?\s*(?:[—–-]+|[,:;])?\s*"
                            r"(?:and\s+)?(?:(?:we|I)(?:'re| are|'m| am)\s+)?(?:now\s+|really\s+|already\s+)?"
                            r"(?:loving|enjoying|settling into|settled in|living in|happy in|based in) (?:life in )?"
                            + OBJ, _X), None),
    ("LIVES_IN", re.compile(r"\bnow that " + I_OR_WE + r"(?:'m| am|'re| are| live| have moved|'ve moved| moved)"
                            r"(?: now)?(?: (?:living|based|settled))? (?:in|to) " + OBJ, _X), None),
    ("LIVES_IN", re.compile(I_OR_WE + r"(?:'m| am|'re| are|'ve| have) " + ADV + r"(?:been )?(?:settled|settling)"
                            r" (?:in|into) (?:life in )?" + OBJ, _X), None),
    ("LIVES_IN", re.compile(r"\b(?:my|our) new (?:home|place|apartment|flat|house) in " + PLACE, _X), None),
    # "Finally moved last week — Porto is lovely" (two sentences joined by move_continued below)
    ("LIVES_IN", re.compile(r"^\s*(?:(?:so|well|yay)\s*,?\s*)?(?:(?:I|we)(?:'ve| have)? )?" + ADV + r"moved\b[^—]{0,40}"
                            r"— " + PLACE + r" (?:is|'s) " + _PRAISE, _X), None),
    # school
    ("STUDIES_AT", re.compile(I_ + r"(?:'ve| have)? " + ADV + r"(?:started|began|enrolled (?:in|at)|'m enrolled at|"
                              r"am enrolled at) (?:my |a )?(?:grad school|graduate school|college|university|uni|"
                              r"(?:master'?s|masters|phd|doctorate|degree)(?: program(?:me)?| degree)?) at " + OBJ, _X),
     None),
    ("STUDIES_AT", re.compile(I_ + r"(?:'m| am) " + ADV + r"(?:studying|a student|a grad student|an undergrad(?:uate)?)"
                              r" at " + OBJ, _X), None),
    ("STUDIES_AT", re.compile(I_ + r" " + ADV + r"(?:study|go to school) at " + OBJ, _X), None),
    # pets: "we adopted a dog", like rules' HAS_PET but for the household too
    ("HAS_PET", re.compile(I_OR_WE + r"(?:'ve| have)? " + ADV + r"(?:adopted|rescued|got|brought home) (?P<obj>(?:a|an|"
                           r"two|three|\d+) (?:new )?(?:\w+ )?" + _PETS + r")(?: (?:named|called) (?P<name>[A-Z]\w+))?"
                           r"(?=\s*(?:[,.;:!?—–]|$)|\s+(?:and|who|that|which|at|from|last|this|yesterday|today|"
                           r"recently|named|called|too)\b)", _X), None),
]
CHINESE_OBJECT_PATTERNS: list[tuple[str, re.Pattern, str | None]] = [
    ("WORKS_AT", re.compile(r"我" + ZH_TIME + r"(?:跳槽|换工作)(?:到|去)了?" + ZH_OBJ + ZH_END), None),
    ("WORKS_AT", re.compile(r"我" + ZH_TIME + r"(?:入职|加入|加盟)了?" + ZH_OBJ + ZH_END), None),
    ("WORKS_AT", re.compile(r"我" + ZH_TIME + r"(?:去|到)(?P<obj>" + _ZH_NAME + r")(?:工作|上班)了"), None),
    ("WORKS_AT", re.compile(r"我在(?P<obj>" + _ZH_NAME + r")的第一天"), None),
    ("LIVES_IN", re.compile(ZH_I_OR_WE + ZH_TIME + r"(?:从(?P<prev>" + _ZH_NAME + r"))?搬(?:家)?(?:到|去)了?"
                            + ZH_OBJ + ZH_END), None),
    ("LIVES_IN", re.compile(ZH_I_OR_WE + ZH_TIME + r"(?:住在|定居在|生活在|定居|安家在)" + ZH_OBJ + ZH_END), None),
    ("STUDIES_AT", re.compile(r"我" + ZH_TIME + r"在(?P<obj>" + _ZH_NAME + r")"
                                r"(?:读书|上学|念书|读研|读博|读大学|读本科|读高中|上高中)"),
     None),
    ("HAS_PET", re.compile(ZH_I_OR_WE + ZH_TIME + r"(?:领养了|收养了|养了)" + ZH_OBJ + ZH_END), None),
    # "我开始读研了，在浙江大学": the stage, then the school after a comma
    ("STUDIES_AT", re.compile(r"我" + ZH_TIME + r"(?:开始)?(?:读研|读博|读研究生|读大学|上大学)了?[，,]\s*(?:现在)?在"
                              r"(?P<obj>" + _ZH_NAME + r")(?=[。！？；，,.!?;]|$)"), None),
]

# Facts that stop without a new value (endings.py): (predicate, pattern with an optional group "obj"; no
# object ends every live value of the predicate).
_CLAUSE_END = r"(?=\s*(?:[,.;:!?)—–]|$)|\s+(?:and|but|because|after|last|this|yesterday|today|recently|now|in|on)\b)"
ENDING_PATTERNS: list[tuple[str, re.Pattern]] = [
    # "left" alone is everyday ("I left Acme today", "left my job early"): only "quit" and what happened to
    # the user end an employer by name; "left" only in "left my job at X"
    ("WORKS_AT", re.compile(I_ + r"(?:'ve| have)? " + ADV + r"(?:(?:quit|left) my (?:job|position|role) (?:at|with) "
                            r"|quit |resigned from |(?:was |got |been )(?:laid off|fired|let go) (?:from|by) )"
                            + OBJ, _X)),
    ("WORKS_AT", re.compile(I_ + r"(?:'ve| have)? " + ADV + r"(?:quit|lost) my job" + _CLAUSE_END + r"|"
                            + I_ + r"(?:'ve| have)? " + ADV + r"(?:was |got |been )(?:laid off|fired|let go)"
                            + _CLAUSE_END + r"(?! (?:from|by)\b)|" + I_ + r"(?:'m| am) " + ADV
                            + r"(?:unemployed|between jobs)" + _CLAUSE_END, _X)),
    ("LIVES_IN", re.compile(I_OR_WE + r"(?:'ve| have)? " + ADV + r"moved (?:out of|away from) " + OBJ, _X)),
    ("STUDIES_AT", re.compile(I_ + r"(?:'ve| have)? " + ADV + r"(?:graduated from|dropped out of|finished (?:my "
                              r"(?:degree|studies) )?at) " + OBJ, _X)),
]
CHINESE_ENDING_PATTERNS: list[tuple[str, re.Pattern]] = [
    ("WORKS_AT", re.compile(r"我" + ZH_TIME + r"从(?P<obj>" + _ZH_NAME + r")(?:离职|辞职)了")),
    ("WORKS_AT", re.compile(r"我" + ZH_TIME + r"(?:辞职|离职|失业|被裁员?)了")),
    ("LIVES_IN", re.compile(ZH_I_OR_WE + ZH_TIME + r"从(?P<obj>" + _ZH_NAME + r")搬走了")),
    ("LIVES_IN", re.compile(ZH_I_OR_WE + ZH_TIME + r"搬离了" + ZH_OBJ + ZH_END)),
    ("STUDIES_AT", re.compile(r"我" + ZH_TIME + r"从(?P<obj>" + _ZH_NAME + r")毕业了")),
]

# (predicate, pattern, the value it states)
_SINGLE, _DATING, _ENGAGED, _MARRIED, _DIVORCED = "single", "in a relationship", "engaged", "married", "divorced"
_GRAD, _PHD, _UNDERGRAD, _GRADUATED = "graduate school", "PhD", "undergraduate", "graduated"
STATUS_PATTERNS: list[tuple[str, re.Pattern, str]] = [
    ("RELATIONSHIP_STATUS", re.compile(r"\bwe(?:'ve| have)? " + ADV + r"(?:broke|broken|split) up\b|" + I_
                                       + r"(?:'ve| have)? " + ADV + r"(?:broke|broken|split) up with\b", _X), _SINGLE),
    ("RELATIONSHIP_STATUS", re.compile(I_ + r"(?:'m| am) " + ADV + r"single(?: again| now)?\b(?!-)", _X), _SINGLE),
    ("RELATIONSHIP_STATUS", re.compile(I_ + r"(?:'m| am) " + ADV + r"(?:dating|seeing) (?:someone|\w+)\b|" + I_
                                       + r"(?:'ve| have)? " + ADV + r"(?:got|have) a (?:new )?(?:girlfriend|boyfriend|"
                                       r"partner)\b|" + I_ + r"(?:'m| am) " + ADV + r"in a relationship\b", _X),
     _DATING),
    ("RELATIONSHIP_STATUS", re.compile(I_OR_WE + r"(?:'ve| have)? " + ADV + r"(?:got|gotten|are|'re|am|'m) engaged\b",
                                       _X), _ENGAGED),
    ("RELATIONSHIP_STATUS", re.compile(I_OR_WE + r"(?:'ve| have)? " + ADV + r"(?:got|gotten|are|'re|am|'m) married\b",
                                       _X), _MARRIED),
    ("RELATIONSHIP_STATUS", re.compile(I_OR_WE + r"(?:'ve| have)? " + ADV + r"(?:got|gotten|are|'re|am|'m) divorced\b",
                                       _X), _DIVORCED),
    ("EDUCATION", re.compile(I_ + r"(?:'ve| have)? " + ADV + r"(?:started|began|enrolled in) (?:my |a )?(?:grad school|"
                             r"graduate school|master'?s|masters)\b", _X), _GRAD),
    ("EDUCATION", re.compile(I_ + r"(?:'ve| have)? " + ADV + r"(?:started|began|enrolled in) (?:my |a )?(?:phd|"
                             r"doctorate)\b", _X), _PHD),
    ("EDUCATION", re.compile(I_ + r"(?:'ve| have)? " + ADV + r"(?:started|began) (?:college|university|uni)\b", _X),
     _UNDERGRAD),
    ("EDUCATION", re.compile(I_ + r"(?:'m| am) " + ADV + r"(?:a |in )(?:grad(?:uate)? (?:student|school)|"
                             r"master'?s student)\b", _X), _GRAD),
    ("EDUCATION", re.compile(I_ + r"(?:'ve| have)? " + ADV + r"graduated\b", _X), _GRADUATED),
    ("RELATIONSHIP_STATUS", re.compile(ZH_I_OR_WE + ZH_TIME + r"分手了|我" + ZH_TIME + _ZH_WITH + r"分手了|"
                                       r"我" + ZH_TIME + r"(?:恢复)?单身(?:了)?"), _SINGLE),
    ("RELATIONSHIP_STATUS", re.compile(r"我" + ZH_TIME + r"(?:有|交)了?(?:女|男)朋友|我" + ZH_TIME + _ZH_WITH
                                       + r"在一起了|我" + ZH_TIME + r"(?:谈|在谈)恋爱|我" + ZH_TIME + r"脱单了"),
     _DATING),
    ("RELATIONSHIP_STATUS", re.compile(ZH_I_OR_WE + ZH_TIME + r"订婚了"), _ENGAGED),
    ("RELATIONSHIP_STATUS", re.compile(ZH_I_OR_WE + ZH_TIME + r"结婚了"), _MARRIED),
    ("RELATIONSHIP_STATUS", re.compile(ZH_I_OR_WE + ZH_TIME + r"离婚了"), _DIVORCED),
    ("EDUCATION", re.compile(r"我" + ZH_TIME + r"(?:开始)?(?:读研|念研|读研究生|上研究生)了?|我" + ZH_TIME
                             + r"研究生开学了"), _GRAD),
    ("EDUCATION", re.compile(r"我" + ZH_TIME + r"(?:开始)?(?:读博|念博)了?"), _PHD),
    ("EDUCATION", re.compile(r"我" + ZH_TIME + r"(?:开始)?(?:上|读)大学了"), _UNDERGRAD),
    ("EDUCATION", re.compile(r"我" + ZH_TIME + r"毕业了"), _GRADUATED),
]


# "We finally moved! Loving Lisbon so far." — the move and the city in two sentences: the second is read as
# the rest of the first ("we moved — loving Lisbon"), only when the first says nothing but the move.
_MOVE_ALONE = re.compile(r"^\s*(?:so\s+|well\s+|yay\s*,?\s*)?(?:" + I_OR_WE + r"(?:'ve| have)? )?" + ADV
                         + r"moved(?: house| over)?(?: at last| last (?:week|month|weekend)| yesterday| this (?:week|"
                         r"month|weekend)| recently| a (?:week|month) ago)?\s*[.!]+\s*$", _X)
_SETTLED = re.compile(r"^\s*(?:(?:we|I)(?:'re| are|'m| am)\s+)?(?:now\s+|really\s+|already\s+)?(?:loving|enjoying|"
                      r"settling into|settled in|living in|happy in|based in)\b"
                      r"|^\s*" + PLACE + r" (?:is|'s) " + _PRAISE, _X)


def move_continued(previous: str | None, sentence: str) -> str | None:
    """The two sentences as one when ``previous`` announces a move alone and ``sentence`` names where."""
    if previous and _MOVE_ALONE.match(previous) and _SETTLED.match(sentence):
        return previous.strip().rstrip(".! ") + " — " + sentence.strip()
    return None
