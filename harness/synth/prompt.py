"""The generation prompt: the report's, as its appendix publishes it ("Synthetic Dataset Prompt"),
as the system message; the slice and the questions asked before it as the user message.

The report gives the model "up to 50 previously generated questions" so that it does not ask one
again; how its code words that message is not published, so the user message is ours.
"""

from __future__ import annotations

import hashlib
from collections.abc import Sequence

from harness.llm.base import Message

# Smith & Troynikov (Chroma, 2024), appendix "Synthetic Dataset Prompt", verbatim (line breaks as printed).
PROMPT = """You are an agent that generates questions from provided text.
Your job is to generate a question and provide the relevant
sections from the text as references.

Instructions:
1. For each provided text, generate a question that can be
   answered solely by the facts in the text.
2. Extract all significant facts that answer the generated
   question.
3. Format the response in JSON format with two fields:
   - 'question': A question directly related to these facts,
     ensuring it can only be answered using the references
     provided.
   - 'references': A list of all text sections that answer
     the generated question. These must be exact copies from
     the original text and should be whole sentences where
     possible.

Notes:
Make the question more specific.
Do not ask a question about multiple topics.
Do not ask a question with over 5 references.

Example:

Text: "Experiment A: The temperature control test showed that
at higher temperatures, the reaction rate increased
significantly, resulting in quicker product formation. However,
at extremely high temperatures, the reaction yield decreased
due to the degradation of reactants.

Experiment B: The pH sensitivity test revealed that the
reaction is highly dependent on acidity, with optimal results
at a pH of 7. Deviating from this pH level in either direction
led to a substantial drop in yield.

Experiment C: In the enzyme activity assay, it was found that
the presence of a specific enzyme accelerated the reaction by
a factor of 3. The absence of the enzyme, however, led to a
sluggish reaction with an extended completion time.

Experiment D: The light exposure trial demonstrated that UV
light stimulated the reaction, making it complete in half the
time compared to the absence of light. Conversely, prolonged
light exposure led to unwanted side reactions that
contaminated the final product."

Response: {
  'oath': "I will not use the word 'and' in the question
unless it is part of a proper noun. I will also make sure the
question is concise.",
  'question': 'What experiments were done in this paper?',
  'references': [
    'Experiment A: The temperature control test showed that at
higher temperatures, the reaction rate increased significantly,
resulting in quicker product formation.',
    'Experiment B: The pH sensitivity test revealed that the
reaction is highly dependent on acidity, with optimal results
at a pH of 7.',
    'Experiment C: In the enzyme activity assay, it was found
that the presence of a specific enzyme accelerated the reaction
by a factor of 3.',
    'Experiment D: The light exposure trial demonstrated that
UV light stimulated the reaction, making it complete in half
the time compared to the absence of light.'
  ]
}

DO NOT USE THE WORD 'and' IN THE QUESTION UNLESS IT IS PART OF
A PROPER NOUN.
YOU MUST INCLUDE THE OATH ABOVE IN YOUR RESPONSE.
YOU MUST ALSO NOT REPEAT A QUESTION THAT HAS ALREADY BEEN
USED."""


def prompt_digest() -> str:
    """The prompt's identity in the manifest (sha256 of the system message)."""
    return hashlib.sha256(PROMPT.encode()).hexdigest()


def messages(text: str, previous: Sequence[str]) -> list[Message]:
    """One generation request: the prompt, then the slice and the questions asked so far."""
    user = f'Text: "{text}"'
    if previous:
        user += ("\n\nQuestions already used (do not repeat them):\n"
                 + "\n".join(f"- {q}" for q in previous))
    return [{"role": "system", "content": PROMPT}, {"role": "user", "content": user + "\n\nResponse:"}]
