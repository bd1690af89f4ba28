"""What people see, in pieces the views and the HTML report lay out: user strings made inert
(``markup``), tables laid out for people (``tables``), what each band chart and the report is
drawn from (``chart_inputs``), the widgets several panels share (``widgets``) and the HTML
report (``report``).

Several kinds of module (tests/project/test_architecture.py): ``markup`` sits below everything
that lays out; ``tables`` and ``chart_inputs`` under the services (pure selection and
formatting); ``report`` draws from charts and those; ``widgets`` above the services, beside the
views. This file imports none of them, so that a service reaching ``chart_inputs`` loads no
figure.
"""
