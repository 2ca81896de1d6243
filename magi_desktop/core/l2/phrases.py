"""Regular-expression building blocks the rules extractor's patterns share (rules.py, updates.py).

An object runs to the next clause boundary or a word that starts a new thought
("… Lisbon so far", "… Stripe last week"); the subject "I" (or "we", the user's
household) opens a clause, so "a friend moved to Lisbon" has none.
"""

from __future__ import annotations

STOP = (r"(?=\s+(?:and|but|because|since|yesterday|today|tonight|last|this|next|so|which|who|when|where|while|"
        r"with|for\s+(?:\d|a\s+while|years|months|weeks|the\s+past)|about|after|before|now|anymore|"
        r"any\s*more|again|too|as\s+well|recently|lately|these\s+days|nowadays|currently|at\s+the\s+moment|"
        r"right\s+now|as\s+(?:an?|the|my|our|their|his|her|head|lead|senior|junior|chief)\s)\b|\s*[,.;:!?()\"“”]|\s*$)")
OBJ = r"(?P<obj>[^,.;:!?()\"“”\n]{1,80}?)" + STOP
PREV = r"(?P<prev>[^,.;:!?\n]{1,60}?)"
ADV = r"(?:just |recently |finally |actually |already |now |also |really |absolutely |totally |do |still )*"
I = r"(?:^|(?<=[\s,;(\"“]))I"  # noqa: E741 - the pronoun
# "We moved", "we adopted a dog": the user's household, said by the user.
I_OR_WE = r"(?:^|(?<=[\s,;(\"“—–]))(?:I|we)"

ZH_OBJ = r"(?P<obj>[^，。！？；,.!?;、\s]{1,20}?)"
ZH_END = r"(?=[，。！？；,.!?;、\s]|了|的|啊|呢|吧|呀|哦|$)"
ZH_TIME = r"(?:刚|刚刚|最近|今天|昨天|前几天|上周|终于|已经|也|还|现在|目前)?"
ZH_I_OR_WE = r"我们?"
